"""What the CLI prints beside its commands: transcripts, ingest lines, progress bars, and
library errors in the command line's words."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from leanreplay.index import FileReport
from leanreplay.placeholders import is_meta

__all__ = [
    "CLI_TERMS",
    "cli_message",
    "cli_words",
    "echo",
    "ingest_line",
    "progress_bar",
    "render_message",
    "terminal_safe",
]

# How the command line says the library names an error's fix refers to (`WorkspaceError.names`):
# the library's messages speak in argument and tool names, the CLI adds its own words here.
CLI_TERMS = {
    "conversations": "`leanreplay conversations`",
    "format": "--format",
    "home": "--home or LEANREPLAY_HOME",
    "roots": "--root DIR",
}


def terminal_safe(text: str, *, block: bool = False) -> str:
    """``text`` with every character a terminal acts on or a reader cannot see (controls,
    escapes, bidi overrides, lone surrogates) written as ``\\uXXXX``, as the cards write
    them, so that no file name or message can forge a line or restyle the terminal. Tabs
    (the CLI's column separator) stay; a ``block`` (a transcript, indented JSON) also keeps
    its newlines."""
    if text.isprintable():
        return text
    keep = "\n\t" if block else "\t"
    out = []
    for ch in text:
        if ch.isprintable() or ch in keep:
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(out)


def echo(text: str, *, err: bool = False, block: bool = False) -> None:
    """Print one line (or, with ``block``, lines) of the CLI's output: every line the
    command prints goes through here, made `terminal_safe`."""
    click.echo(terminal_safe(text, block=block), err=err)


def cli_words(exc: BaseException | None) -> str:
    """`` (on the command line: --flag)`` for the names the error's fix refers to, or ""."""
    terms = [CLI_TERMS[name] for name in getattr(exc, "names", ()) if name in CLI_TERMS]
    return f" (on the command line: {', '.join(terms)})" if terms else ""


def cli_message(exc: BaseException) -> str:
    """The error's message, with the command line's words for the names its fix refers to."""
    return f"{exc}{cli_words(exc)}"


def render_message(message: dict[str, Any]) -> str:
    """A readable block for one message of a transcript."""
    head = f"--- {message.get('id', '?')} {message.get('role') or message.get('type')}"
    if message.get("type") == "function_call":
        head += (
            f"\n[call {message.get('name')} {message.get('call_id')}] {message.get('arguments')}"
        )
    if message.get("type") == "function_call_output":
        head += f" (result of {message.get('call_id')})\n{message.get('output')}"
    if message.get("tool_call_id"):
        head += f" (result of {message['tool_call_id']})"
    if is_meta(message):
        head += " [meta]"
    lines = [head]
    content = message.get("content")
    if isinstance(content, str):
        lines.append(content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind in ("text", "input_text", "output_text"):
                lines.append(str(block.get("text", "")))
            elif kind == "tool_use":
                arguments = json.dumps(block.get("input"), ensure_ascii=False)
                lines.append(f"[call {block.get('name')} {block.get('id')}] {arguments}")
            elif kind == "tool_result":
                inner = block.get("content")
                text = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
                lines.append(f"[result of {block.get('tool_use_id')}] {text}")
            elif kind == "thinking":
                lines.append(f"[thinking] {block.get('thinking', '')}")
            else:
                lines.append(f"[{kind} block]")
    for call in message.get("tool_calls") or ():
        function = call.get("function", {}) if isinstance(call, dict) else {}
        lines.append(f"[call {function.get('name')} {call.get('id')}] {function.get('arguments')}")
    return "\n".join(lines)


def ingest_line(file: FileReport, sizes: dict[str, int]) -> str:
    """One line per file: status, path, and what it stored or why it was refused."""
    path = os.path.relpath(file.path) if file.path.startswith(os.getcwd() + os.sep) else file.path
    head = f"{file.status:<9} {path}"
    if file.status in ("refused", "skipped"):
        reason = str(file.reason)
        if reason.startswith(file.path + " "):
            reason = reason[len(file.path) + 1 :]  # the path is at the head of the line already
        return f"{head}: {reason}{cli_words(file.error)}"
    ids = file.conversation_ids
    if len(ids) == 1:
        what = f"{ids[0]}: {sizes.get(ids[0], 0)} messages, {file.format}"
    else:
        what = f"{len(ids)} conversations, {file.format}"
    if file.status == "appended":
        what += f", {file.added} new"
    notes = f" ({'; '.join(file.notes)})" if file.notes else ""
    return f"{head} -> {what}{notes}"


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int, str], None] | None]:
    """A `click.progressbar` on a terminal's stderr, fed by a ``(done, total, message)`` hook
    that worker threads may call; None when stderr is not a terminal. The bar appears only
    once there is progress to show, so quick calls print nothing."""
    if not sys.stderr.isatty():
        yield None
        return
    lock = threading.Lock()
    bars: list[Any] = []

    def show(done: int, total: int, message: str) -> None:
        with lock:
            if not bars:
                bars.append(click.progressbar(length=max(total, 1), label=label, file=sys.stderr))
            bar = bars[0]
            bar.length = max(total, 1)
            bar.label = f"{label}: {message}"[:60]
            bar.update(max(done - bar.pos, 0))

    try:
        yield show
    finally:
        if bars:
            bars[0].render_finish()
