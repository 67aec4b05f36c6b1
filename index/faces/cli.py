"""The ``leanreplay`` command: a thin click shell over the library. Only this module prints."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import json
import logging
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar, cast

import click

from leanreplay import cards
from leanreplay.index import (
    LOG_FORMATS,
    StoreError,
    Workspace,
    WorkspaceError,
    tool_schemas,
)
from leanreplay.index._tools import SCHEMA_FORMATS, tools_of
from leanreplay.index.store._home import check_home
from leanreplay.placeholders import (
    DEFAULT_MIN_CHARS,
    DEFAULT_MIN_REQUEST_CHARS,
    AgeUnit,
    PlaceholderError,
    ReplayPolicy,
)

from ._address import expose, parse_address
from ._callexpr import looks_like_call, parse_call
from ._demo import run_demo
from ._net import HttpPolicy
from ._render import (
    cli_message,
    echo,
    ingest_line,
    progress_bar,
    render_message,
    terminal_safe,
)

F = TypeVar("F", bound=Callable[..., Any])


def default_home() -> str:
    """The user data dir: ``$XDG_DATA_HOME/leanreplay``, else ``~/.local/share/leanreplay``.
    ``--home`` and ``$LEANREPLAY_HOME`` (read by click, before this default) win over it."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return os.path.join(base, "leanreplay")


@dataclass
class Settings:
    home: str
    roots: tuple[str, ...]
    conversations: tuple[str, ...] = ()
    store: str | None = None


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def emit_json(value: Any) -> None:
    echo(json.dumps(value, ensure_ascii=False, indent=2), block=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="leanreplay")
@click.option(
    "--home",
    envvar="LEANREPLAY_HOME",
    default=default_home,
    show_default="$LEANREPLAY_HOME or the user data dir",
    type=click.Path(file_okay=False),
    help="Where the store, indexes and logs live.",
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help=(
        "A folder the file tools may read (repeatable; default: the current directory, "
        "except for `serve`, which then reads only the roots its MCP client offers)."
    ),
)
@click.option(
    "--conversation",
    "conversations",
    multiple=True,
    help="Limit the conversation tools to this id (repeatable); others are 'not found'.",
)
@click.option(
    "--store",
    envvar="LEANREPLAY_STORE",
    default=None,
    metavar="URL",
    help=(
        "Keep the conversations in this PostgreSQL database (postgresql://USER@HOST:PORT/DB), "
        "shared by a fleet of workers; default: the SQLite store in the home."
    ),
)
@click.pass_context
def cli(
    ctx: click.Context,
    home: str,
    roots: tuple[str, ...],
    conversations: tuple[str, ...],
    store: str | None,
) -> None:
    """Keep what an agent replays to its model lean, without losing a byte."""
    ctx.obj = Settings(home=home, roots=roots, conversations=conversations, store=store)


def error_json(message: str, kind: str) -> str:
    return json.dumps({"error": message, "type": kind}, ensure_ascii=False)


def library_errors(fn: F) -> F:
    """Turn library errors into one clear line and a non-zero exit (with ``--json``, the
    line is ``{"error": ..., "type": ...}`` on stdout)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (WorkspaceError, PlaceholderError, cards.CardError) as exc:
            if kwargs.get("as_json"):
                echo(error_json(cli_message(exc), type(exc).__name__))
                sys.exit(1)
            raise click.ClickException(terminal_safe(cli_message(exc))) from None
        except click.ClickException as exc:
            if kwargs.get("as_json"):
                echo(error_json(exc.format_message(), type(exc).__name__))
                sys.exit(exc.exit_code)
            # click prints it as "Error: ..." (its type says final; it is a plain attribute)
            setattr(exc, "message", terminal_safe(exc.message))  # noqa: B010
            raise

    return cast(F, wrapper)


def workspace(ctx: click.Context, *, cwd_is_root: bool = True) -> Workspace:
    """The workspace of the command line's settings; without --root the file tools read the
    current directory, unless ``cwd_is_root`` is False (`serve`: the client's roots)."""
    settings = ctx.find_object(Settings)
    if settings is None:  # only when a command is invoked outside the `leanreplay` group
        raise click.UsageError("run this command through `leanreplay`")
    try:
        check_home(settings.home)
    except StoreError as exc:
        raise StoreError(f"--home {settings.home}: {exc}") from None
    roots = settings.roots or ((os.getcwd(),) if cwd_is_root else ())
    ws = Workspace(
        settings.home, roots, conversations=settings.conversations or None, store=settings.store
    )
    for notice in ws.notices:
        echo(f"warning: {notice}", err=True)
    return ws


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=200,
    show_default=True,
    help="Most files listed per folder (as file_list).",
)
@click.option(
    "--after",
    default=None,
    metavar="RELPATH",
    help="In a folder, continue after this relative path (the `more:` line names it).",
)
@click.option(
    "--include-ignored",
    is_flag=True,
    help="In a git work tree, also list the files .gitignore ignores.",
)
@json_option
@click.pass_context
@library_errors
def card(
    ctx: click.Context,
    paths: tuple[str, ...],
    limit: int,
    after: str | None,
    include_ignored: bool,
    as_json: bool,
) -> None:
    """Print the one-line card of each file in PATHS; a folder lists its files (file_list),
    even a folder .gitignore ignores (files it ignores inside are left out, and counted)."""
    results: list[dict[str, Any]] = []
    failed = False
    for path in paths:
        if os.path.isdir(path):
            with Workspace(ctx.obj.home, [path]) as ws:
                listing = ws.file_list(
                    os.path.abspath(path),
                    limit=limit,
                    after=after,
                    include_ignored=include_ignored,
                )
            if as_json:
                results.append(listing)
                continue
            for line in listing["files"]:
                echo(line)
            for note in listing["notes"]:
                if "include_ignored=True" in note:
                    note = note.replace("include_ignored=True", "--include-ignored")
                    echo(f"note: {note}", err=True)
            if not listing["files"] and not listing["notes"]:
                echo(f"note: no files under {path}", err=True)
            if listing["next"]:
                _, following = parse_call(listing["next"])
                more = ["leanreplay", "card", path, "--limit", str(limit)]
                more += ["--after", following["after"]]
                if include_ignored:
                    more.append("--include-ignored")
                echo(f"more: {shlex.join(more)}", err=True)
            continue
        try:
            c = cards.card_for(path)
        except cards.CardError as exc:
            failed = True
            if as_json:
                results.append({"path": path, "error": str(exc), "type": type(exc).__name__})
            else:
                echo(f"Error: {exc}", err=True)
            continue
        if as_json:
            results.append(c.to_dict())
        else:
            echo(c.render())
    if as_json:
        emit_json(results)
    if failed:
        sys.exit(1)


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(LOG_FORMATS), default="auto", show_default=True)
@click.option(
    "--conversation-id", default=None, help="Store the one file's conversation under this id."
)
@click.option(
    "--no-fold",
    is_flag=True,
    help="Do not fold a long log as it is imported (fold it later with `fold`).",
)
@json_option
@click.pass_context
@library_errors
def ingest(
    ctx: click.Context,
    paths: tuple[str, ...],
    fmt: str,
    conversation_id: str | None,
    no_fold: bool,
    as_json: bool,
) -> None:
    """Import agent logs: files, globs and folders (JSON/JSONL messages, OpenAI Responses
    items, Claude Code, mini-swe-agent, tau-bench). A folder gives every log under it, so a
    Claude Code project folder (~/.claude/projects/NAME) gives every session. Prints a line
    per file and a summary; exits 1 when any file was refused (one file: its one-line error)."""
    with workspace(ctx) as ws, progress_bar("ingesting") as bar:

        def progress(done: int, total: int, path: str) -> None:
            if bar is not None and not as_json:
                bar(done, total, os.path.basename(path))

        report = ws.ingest(
            *paths,
            format=fmt,
            conversation_id=conversation_id,
            errors="report",
            progress=progress,
            fold=not no_fold,
        )
        sizes = {cid: ws.info(cid).messages for cid in report}
    if len(report.files) == 1 and not report.ok:
        error = report.files[0].error
        if isinstance(error, WorkspaceError):
            raise error  # one line, or {"error", "type"} JSON with --json
        raise click.ClickException(str(error or report.files[0].reason))
    if as_json:
        emit_json(report.to_dict())
    else:
        for file in report.files:
            echo(ingest_line(file, sizes))
        echo(f"-- {report.summary()}")
    if not report.ok:
        sys.exit(1)


@cli.command()
@json_option
@click.pass_context
@library_errors
def conversations(ctx: click.Context, as_json: bool) -> None:
    """List the stored conversations."""
    with workspace(ctx) as ws:
        infos = [ws.info(cid) for cid in ws.conversations()]
    if as_json:
        emit_json(
            [{"conversation_id": i.id, "messages": i.messages, "format": i.format} for i in infos]
        )
        return
    if not infos:
        settings = ctx.find_object(Settings)
        home = settings.home if settings else "the home"
        echo(f"no conversations stored in {home}; import one with `leanreplay ingest FILE`")
    for info in infos:
        echo(f"{info.id}\t{info.messages} messages\t{info.format or ''}")


@cli.command(name="replay")
@click.argument("target")
@click.option(
    "--age-unit",
    type=click.Choice(["exchange_or_turn", "user_exchange", "assistant_turn"]),
    default="exchange_or_turn",
    show_default=True,
    help="What ages a tool result: user exchanges or assistant turns (the default), user "
    "exchanges only, or assistant turns only.",
)
@click.option("--seed", is_flag=True, help="The original rule: ReplayPolicy.seed().")
@click.option(
    "--min-chars", type=click.IntRange(min=1), default=DEFAULT_MIN_CHARS, show_default=True
)
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    default=None,
    help="Recent exchanges (or turns) kept verbatim.",
)
@click.option(
    "--min-request-chars",
    type=click.IntRange(min=0),
    default=DEFAULT_MIN_REQUEST_CHARS,
    show_default=True,
    help="A request smaller than this is replayed whole (0: trim requests of any size).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(LOG_FORMATS),
    default="auto",
    show_default=True,
    help="Format of TARGET when it is a log file.",
)
@click.option(
    "--conversation-id",
    default=None,
    help="When TARGET is a log file: store its conversation under this id.",
)
@click.option(
    "--no-store",
    is_flag=True,
    help="Replay a log FILE without storing it (by default it is stored in the home).",
)
@json_option
@click.pass_context
@library_errors
def replay_command(
    ctx: click.Context,
    target: str,
    age_unit: str,
    seed: bool,
    min_chars: int,
    keep: int | None,
    min_request_chars: int,
    fmt: str,
    conversation_id: str | None,
    no_store: bool,
    as_json: bool,
) -> None:
    """Print the lean replay of TARGET (a stored conversation id, or a log file, which is
    stored first unless --no-store)."""
    base = ReplayPolicy.seed() if seed else ReplayPolicy(age_unit=cast(AgeUnit, age_unit))
    options: dict[str, Any] = {"min_chars": min_chars, "min_request_chars": min_request_chars}
    if keep is not None:
        options[
            "keep_user_exchanges" if base.age_unit == "user_exchange" else "keep_assistant_turns"
        ] = keep
    policy = dataclasses.replace(base, **options)
    is_file = os.path.isfile(target)
    if os.path.isdir(target):
        raise click.UsageError(
            f"{target!r} is a folder; import it with `leanreplay ingest {target}`, then replay "
            "one of its conversations by id (`leanreplay conversations` lists them)"
        )
    if not is_file and (conversation_id is not None or fmt != "auto"):
        raise click.UsageError(
            "--conversation-id and --format apply when TARGET is a log file; "
            f"there is no file {target!r}"
        )
    with contextlib.ExitStack() as stack:
        if is_file and no_store:
            ws = stack.enter_context(
                Workspace(stack.enter_context(tempfile.TemporaryDirectory(prefix="leanreplay-")))
            )
        else:
            ws = stack.enter_context(workspace(ctx))
        if is_file:
            ids = list(ws.ingest(target, format=fmt, conversation_id=conversation_id))
        else:
            ids = [target]
        results = {cid: ws.replay(cid, policy) for cid in ids}
        if is_file:
            # On stderr: stdout stays the replay (and valid JSON with --json).
            for cid in ids:
                count = ws.info(cid).messages
                echo(
                    f"not stored ({count} messages): --no-store"
                    if no_store
                    else f"stored conversation {cid!r} ({count} messages) in {ws.home}; "
                    f"replay it again with `leanreplay replay {cid}`",
                    err=True,
                )
    if as_json:
        if len(results) == 1:
            (result,) = results.values()
            emit_json({"messages": result.messages, "stats": result.stats()})
        else:
            emit_json(
                {cid: {"messages": r.messages, "stats": r.stats()} for cid, r in results.items()}
            )
        return
    for cid, result in results.items():
        echo(f"== {cid} ==")
        for message in result.messages:
            echo(render_message(message), block=True)
        stats = result.stats()
        saved = 1 - stats["chars_out"] / stats["chars_in"] if stats["chars_in"] else 0.0
        echo(
            f"-- {stats['messages']} messages, {stats['chars_in']:,} chars in, "
            f"{stats['chars_out']:,} out ({saved:.1%} smaller), "
            f"{stats['placeholders']} placeholders"
        )


@cli.command()
@click.argument("query")
@click.option("--conversation-id", default=None, help="Search only this conversation.")
@click.option("--limit", type=click.IntRange(1, 50), default=10, show_default=True)
@json_option
@click.pass_context
@library_errors
def search(
    ctx: click.Context, query: str, conversation_id: str | None, limit: int, as_json: bool
) -> None:
    """Search stored conversations (folded messages included) for QUERY."""
    with workspace(ctx) as ws:
        result = ws.conversation_search(query, conversation_id=conversation_id, limit=limit)
    if as_json:
        emit_json(result)
        return
    if not result["hits"]:
        echo(f"no messages match {query!r}")
    for hit in result["hits"]:
        echo(f"{hit['conversation_id']} {hit['message_id']} ({hit['role']}) {hit['snippet']}")
        echo(f"    {hit['read']}")


class ToolsHelp(click.Command):
    """A command whose help ends with the list of tools and what each does."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Tools"):
            tools = tools_of(Workspace).values()
            formatter.write_dl([(spec.name, spec.description) for spec in tools])
        formatter.write_paragraph()
        formatter.write_text("Each tool's arguments: `leanreplay tools --format mcp`.")


@cli.command(cls=ToolsHelp)
@click.argument("tool")
@click.argument("arguments", required=False)
@click.pass_context
@library_errors
def call(ctx: click.Context, tool: str, arguments: str | None) -> None:
    """Run one tool (see `leanreplay tools`) with JSON ARGUMENTS and print its JSON result.

    TOOL may be a whole call as the tools print it (a placeholder's call, a `next`), with no
    ARGUMENTS: leanreplay call 'conversation_read(conversation_id="c", message_id="m4")'."""
    if looks_like_call(tool):
        if arguments is not None:
            raise click.UsageError(
                "a call written as tool(name=value, ...) takes no ARGUMENTS; put them in the call"
            )
        try:
            tool, parsed = parse_call(tool)
        except ValueError as exc:
            raise click.ClickException(
                f"TOOL {tool[:80]!r}: {exc}; paste a call as printed, as in "
                '\'conversation_read(conversation_id="c", message_id="m4")\''
            ) from None
    else:
        parsed = _json_arguments("{}" if arguments is None else arguments)
    with workspace(ctx) as ws, progress_bar(tool) as progress:
        result = ws.call(tool, parsed, progress=progress)
    emit_json(result)


def _json_arguments(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"ARGUMENTS must be a JSON object: {exc}") from None
    except (ValueError, RecursionError):  # an integer over 4,300 digits, or nesting too deep
        raise click.ClickException(
            "ARGUMENTS holds an integer too long or nesting too deep to parse; tool arguments "
            "are flat JSON objects with integers below 2**63"
        ) from None


# The top-level modules of the `mcp` extra; any of them missing means the extra is not installed.
MCP_EXTRA_MODULES = frozenset(
    {"anyio", "mcp", "mcp_types", "sse_starlette", "starlette", "uvicorn"}
)


def _extra_module(name: str, command: str, stack: str) -> ModuleType:
    """``index.faces.<name>``, which needs the `mcp` extra; a clear message when it is missing."""
    try:
        return importlib.import_module(f"leanreplay.index.faces.{name}")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in MCP_EXTRA_MODULES:
            raise
        raise click.ClickException(
            f"`leanreplay {command}` needs the {stack}, which is not installed ({exc.name} "
            "is missing); install it with: pip install 'leanreplay[mcp]'"
        ) from None


def _server_module() -> ModuleType:
    """The MCP server module; only `serve` needs the server stack (the `mcp` extra)."""
    from ._mcp_pin import mcp_conflict  # here: the imports above are everyone's merge point

    conflict = mcp_conflict()
    if conflict is not None:
        raise click.ClickException(conflict)
    return _extra_module("server", "serve", "MCP server stack")


@cli.command()
@click.option(
    "--http",
    "http_address",
    default=None,
    metavar="HOST:PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.",
)
@click.option(
    "--token",
    envvar="LEANREPLAY_TOKEN",
    default=None,
    help="Bearer token HTTP clients must send, at least 32 chars (or LEANREPLAY_TOKEN); "
    "one is generated and printed once when none is given.",
)
@click.option("--no-auth", is_flag=True, help="Serve loopback HTTP without a bearer token.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback HTTP address.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME[:PORT]",
    help="Another Host header clients reach the server by (repeatable), e.g. a DNS name.",
)
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    metavar="URL",
    help="A browser Origin allowed besides the server's own (repeatable).",
)
@click.option(
    "--upstream",
    "upstream_config",
    default=None,
    type=click.Path(dir_okay=False),
    help="Gateway mode: an mcpServers JSON config whose servers' tools are found with "
    "tool_search and served once activated with tool_activate.",
)
@click.pass_context
@library_errors
def serve(
    ctx: click.Context,
    http_address: str | None,
    token: str | None,
    no_auth: bool,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    upstream_config: str | None,
) -> None:
    """Run the MCP server over stdio (default) or streamable HTTP (--http).

    Without --root, the file tools read only the folders the client offers as MCP roots.
    """
    server = _server_module()
    if (
        http_address is None
        and ctx.get_parameter_source("token") is click.core.ParameterSource.COMMANDLINE
    ):
        raise click.ClickException(
            "--token is for --http; over stdio the client starts the server itself and "
            "no token is needed"
        )
    from leanreplay.index.faces import gateway

    specs = gateway.read_config(upstream_config) if upstream_config is not None else None

    if http_address is not None:
        host, port = parse_address(http_address)
        exposure = expose(
            host,
            token,
            no_auth=no_auth,
            allow_remote=allow_remote,
            grants="reads your roots and history",
        )
        try:
            sock = server.bind(host, port)
        except OSError as exc:
            raise click.ClickException(
                f"cannot serve on {http_address}: {exc.strerror or exc}; is another server "
                "using the port? pick another one"
            ) from None
        if exposure.generated:
            echo(
                "bearer token (printed once; clients send Authorization: Bearer ...): "
                f"{exposure.token}",
                err=True,
            )
        if exposure.warning:
            echo(exposure.warning, err=True)
    ws = workspace(ctx, cwd_is_root=False)
    settings = ctx.find_object(Settings)
    client_roots = not (settings and settings.roots) and specs is None
    if client_roots:
        echo(
            "leanreplay: no --root given: the file tools serve no files until the client "
            "provides roots (MCP roots/list); pass --root DIR to serve a folder",
            err=True,
        )
    elif not (settings and settings.roots):
        echo(
            "leanreplay: no --root given: the gateway's file tools serve no files; pass "
            "--root DIR to serve a folder",
            err=True,
        )
    if http_address is None:
        if specs is not None:
            gateway.serve_gateway_stdio(ws, specs)
        else:
            server.serve_stdio(ws, client_roots=client_roots)
        return
    policy = server.HttpPolicy.for_bind(host, port, allowed_hosts, allowed_origins)
    echo(f"serving MCP at http://{http_address}/mcp", err=True)
    bearer = exposure.token
    if specs is not None:
        sock.close()  # the gateway binds its own; the check above already proved the port free
        gateway.serve_gateway_http(ws, specs, host, port, bearer, policy)
    else:
        server.serve_http(ws, host, port, bearer, policy, client_roots=client_roots, sock=sock)


def _view_module() -> ModuleType:
    """The web view; it runs on the server stack of the `mcp` extra (starlette, uvicorn)."""
    return _extra_module("view", "view", "web server stack")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8777,
    show_default=True,
    help="Port to serve on; 0 picks a free one.",
)
@click.option(
    "--token",
    envvar="LEANREPLAY_TOKEN",
    default=None,
    help="The token the browser must present (or LEANREPLAY_TOKEN); default: a random one.",
)
@click.option("--no-auth", is_flag=True, help="Serve without a token.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback address.")
@click.pass_context
@library_errors
def view(
    ctx: click.Context,
    host: str,
    port: int,
    token: str | None,
    no_auth: bool,
    allow_remote: bool,
) -> None:
    """Open a local, read-only web view: conversations, what the model saw, folds, compactions.

    Prints the URL to open (it carries the token once; the browser keeps a cookie).
    """
    web = _view_module()
    host = host.strip("[]")
    exposure = expose(
        host, token, no_auth=no_auth, allow_remote=allow_remote, grants="reads your history"
    )
    if exposure.warning:
        echo(exposure.warning, err=True)
    with workspace(ctx) as ws:
        try:
            web.serve(
                ws,
                host,
                port,
                exposure.token,
                allow_remote=allow_remote,
                # stdout: the one line a script or a terminal needs (it carries the token)
                announce=lambda url: echo(f"leanreplay view at {url}"),
            )
        except OSError as exc:
            raise click.ClickException(
                f"cannot serve on {host}:{port}: {exc.strerror}; pick another --port (0 for any)"
            ) from None


# The top-level modules of the `proxy` extra.
PROXY_EXTRA_MODULES = frozenset({"anyio", "httpx2", "starlette", "uvicorn"})


def _proxy_module() -> ModuleType:
    """The proxy face; it needs the `proxy` extra (starlette, uvicorn, httpx2)."""
    try:
        return importlib.import_module("leanreplay.index.faces.proxy")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in PROXY_EXTRA_MODULES:
            raise
        raise click.ClickException(
            f"`leanreplay proxy` needs the HTTP stack, which is not installed ({exc.name} is "
            "missing); install it with: pip install 'leanreplay[proxy]'"
        ) from None


@cli.command()
@click.option(
    "--upstream",
    required=True,
    metavar="URL",
    help="The API to forward to: https://api.anthropic.com, https://api.openai.com, or a "
    "gateway speaking their APIs.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8787,
    show_default=True,
    help="Port to serve on; 0 picks a free one.",
)
@click.option(
    "--token",
    envvar="LEANREPLAY_TOKEN",
    default=None,
    help="Off loopback: the token every request must carry in the x-leanreplay-token header "
    "(at least 32 chars, or LEANREPLAY_TOKEN); one is generated when none is given.",
)
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback address.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME[:PORT]",
    help="Another Host header clients reach the proxy by (repeatable), e.g. a DNS name.",
)
@click.pass_context
@library_errors
def proxy(
    ctx: click.Context,
    upstream: str,
    host: str,
    port: int,
    token: str | None,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
) -> None:
    """Run a transparent proxy in front of the Anthropic or OpenAI API.

    Point a client's base URL at it (ANTHROPIC_BASE_URL, OPENAI_BASE_URL): its requests
    are stored, sent on as lean replays with retrieval tools the proxy answers itself, and
    answered as the API answers. Auth headers pass through untouched, never stored.
    """
    face = _proxy_module()
    host = host.strip("[]")
    exposure = expose(
        host,
        token,
        no_auth=False,
        allow_remote=allow_remote,
        grants="can send requests through it and read the conversations they continue",
        token_on_loopback=False,  # on loopback the proxy is the client's own, like the API key
    )
    if exposure.generated:
        echo(
            f"proxy token (printed once; clients send x-leanreplay-token: ...): {exposure.token}",
            err=True,
        )
    if exposure.warning:
        echo(exposure.warning, err=True)
    config = face.ProxyConfig(
        upstream,
        token=exposure.token,
        http=HttpPolicy(None) if allow_remote else None,
    )
    with workspace(ctx, cwd_is_root=False) as ws:
        try:
            face.serve(
                ws,
                config,
                host,
                port,
                announce=lambda url: echo(f"leanreplay proxy on {url} -> {upstream}"),
                allowed_hosts=allowed_hosts,
            )
        except OSError as exc:
            raise click.ClickException(
                f"cannot serve on {host}:{port}: {exc.strerror}; pick another --port (0 for any)"
            ) from None


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(SCHEMA_FORMATS),
    default="openai",
    show_default=True,
)
def tools(fmt: str) -> None:
    """Print the tool schemas for function calling."""
    emit_json(tool_schemas(fmt))


@cli.command()
@click.argument("conversation_id")
@json_option
@click.pass_context
@library_errors
def fold(ctx: click.Context, conversation_id: str, as_json: bool) -> None:
    """Fold the old prefix of a conversation into its summary (offline summarizer)."""
    with workspace(ctx) as ws:
        result = ws.fold(conversation_id)
    if as_json:
        emit_json(result.to_dict())
        return
    if not result.folded:
        echo(f"not folded: {result.reason}")
        return
    echo(
        f"folded {result.messages_folded} messages through {result.summarized_through_message_id} "
        f"into a {len(result.summary or ''):,}-char summary (fold #{result.generation})"
    )


@cli.command()
def demo() -> None:
    """Run the pipeline on the bundled sample files (in a temporary home) and show what it saved."""
    run_demo()


def main() -> None:
    # The command is the application, so it sets the level the library must not: malformed
    # PDFs make pypdf log a warning per object, which is noise on a terminal.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    cli()


if __name__ == "__main__":
    main()
