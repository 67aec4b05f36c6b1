"""Importers: real agent logs become stored conversations in the providers' own shapes.

Importers never invent content and never drop it: the store holds exactly what the log holds,
one message per log record, so a log that grows (a live session) re-imports by appending
whatever is new, wherever it was cut. They skip what is not a message and mark injected input
as meta. Making the replay valid for a provider (joining the records of one API message,
stubbing calls without a result, leaving out orphan results) is `placeholders.repair_pairing`,
at replay time.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from leanreplay.placeholders import (
    SPLIT_KEY,
    is_injected_text,  # the one list of injected prefixes
    role_of,
)

from .._errors import (
    ImportFormatError,
    InvalidArgumentError,
    NotALogError,
    NotFoundError,
    not_a_file,
)

__all__ = [
    "LOG_FORMATS",
    "LOG_SUFFIXES",
    "MAX_IMPORT_BYTES",
    "LoadedConversation",
    "NotALogError",
    "check_log_format",
    "conversation_name",
    "file_stem",
    "load_log",
]

LOG_FORMATS = (
    "auto",
    "openai",
    "anthropic",
    "openai-responses",
    "claude-code",
    "mini-swe-agent",
    "tau-bench",
)
MAX_IMPORT_BYTES = 1024 * 1024 * 1024  # whole-file JSON formats are loaded into memory
_READ_CHUNK = 16 * 1024 * 1024

_CLAUDE_MESSAGE_TYPES = ("user", "assistant")


@dataclass
class LoadedConversation:
    """One conversation read from a log: its id (from the file), the messages as the log
    holds them, the format found, and the importer's notes (skipped or repaired records)."""

    conversation_id: str
    messages: list[dict[str, Any]]
    format: str
    notes: list[str] = field(default_factory=list)


def _read_log(path: str) -> bytes:
    """The bytes of the regular file at ``path``, at most `MAX_IMPORT_BYTES`. It is opened
    without blocking and checked before a byte is read: a FIFO would block the import for
    ever, and a device (a link to /dev/zero) never ends."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise NotFoundError(f"{path} cannot be opened: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise not_a_file(path, mode, "ingest reads regular files (log files)")
        chunks = []
        read = 0
        while read <= MAX_IMPORT_BYTES:  # the size can grow while it is read (a live log)
            chunk = os.read(fd, min(_READ_CHUNK, MAX_IMPORT_BYTES + 1 - read))
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
        if read > MAX_IMPORT_BYTES:
            raise ImportFormatError(
                f"{path} is over the import limit of {MAX_IMPORT_BYTES} bytes; split it"
            )
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_log_format(format: object) -> str:
    """``format`` if it is one of `LOG_FORMATS`."""
    if format not in LOG_FORMATS:
        formats = ", ".join(LOG_FORMATS)
        raise InvalidArgumentError(f"format must be one of {formats}, got {format!r}")
    return str(format)


def load_log(
    path: str | os.PathLike[str], *, format: str = "auto", conversation_id: str | None = None
) -> list[LoadedConversation]:
    """Read one agent log into conversations, without storing them (`Workspace.ingest` stores
    them): one for most formats, one per element of a tau-bench array.

    Args:
        format: one of `LOG_FORMATS`; ``"auto"`` detects it.
        conversation_id: the id of the one conversation, instead of the file's.

    Raises:
        InvalidArgumentError: unknown format name.
        ImportFormatError: the file is not in that format (or no format fits, for "auto").
    """
    check_log_format(format)
    path = os.fspath(path)
    raw = _read_log(path)
    stem = file_stem(path)
    bom = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw.decode("utf-8-sig")
        utf8 = raw[bom:]
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":
            raise ImportFormatError(
                f"{path} is not UTF-8 text ({exc}); logs must be JSON"
            ) from None
        # A live log caught while a character was being written: its last line is partial
        # anyway (skipped as unreadable), and the next import reads it whole. (The error
        # counts from after the byte order mark: utf-8-sig decodes what follows it.)
        utf8 = raw[bom : bom + exc.start]
        text = utf8.decode("utf-8")
    whole = _parse_whole(text)
    lines = _Lines(text)
    try:
        fmt = format if format != "auto" else _detect(path, whole, lines)
    except ImportFormatError:
        problem = _unholdable(text)
        if problem is None:
            raise
        raise ImportFormatError(f"{path} {problem}; it cannot be imported") from None
    if fmt == "claude-code":
        items = [_claude_code(utf8, stem)]
    elif fmt == "mini-swe-agent":
        items = [_mini_swe_agent(whole, path)]
    elif fmt == "tau-bench":
        items = _tau_bench(whole, stem, path)
    else:
        items = [_plain(whole, lines, stem, fmt, path)]
    notes = [n for item in items for n in item.notes]
    garbled = any(n.endswith(UNREADABLE) for n in notes)
    if not any(item.messages for item in items) and garbled and text.endswith("\n"):
        # Only unreadable lines, and none still being written (a live log cut inside its first
        # record is imported when it grows): storing an empty conversation would report
        # success for a file that held nothing.
        raise ImportFormatError(
            f"{path} holds no {fmt} messages ({'; '.join(notes)}); nothing imported"
        )
    if conversation_id is not None:
        if len(items) != 1:
            raise InvalidArgumentError(
                f"{path} holds {len(items)} conversations; a conversation id names only one, "
                "leave it out to use the ids from the file"
            )
        items[0].conversation_id = conversation_id
    return items


UNREADABLE = "unreadable lines skipped"  # the note of lines that are not JSON
LOG_SUFFIXES = (".traj.json", ".jsonl", ".ndjson", ".json")


def file_stem(path: str) -> str:
    """The file name without its log suffix (``x.traj.json`` -> ``x``)."""
    stem = os.path.basename(path)
    for suffix in LOG_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def conversation_name(path: str) -> str:
    """The conversation id a file's own name gives it.

    mini-swe-agent writes ``<run>/<instance>/<instance>.traj.json``: two runs of one instance
    share the file name, so the run folder is part of the id (``<run>/<instance>``).
    """
    stem = file_stem(path)
    folder = os.path.dirname(os.path.abspath(path))
    run = os.path.basename(os.path.dirname(folder))
    if path.endswith(".traj.json") and os.path.basename(folder) == stem and run:
        return f"{run}/{stem}"
    return stem


_NOT_JSON = object()


def _parse_whole(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        # Not one JSON value, or one Python cannot hold (nested deeper than its recursion
        # limit, an integer over 4,300 digits): read it as JSONL, line by line.
        return _NOT_JSON


def _unholdable(text: str) -> str | None:
    """Why Python's JSON parser refuses text that may be valid JSON, if that is the reason."""
    try:
        json.loads(text)
    except RecursionError:
        return "nests lists and objects deeper than Python can parse (about 1,000 levels)"
    except json.JSONDecodeError:
        return None
    except ValueError as exc:
        if "digits" in str(exc):
            return "holds an integer of over 4,300 digits, more than Python parses"
    return None


_JSON_SPACE = " \t\r"
# json.loads without its three Python frames per line: the decoder's own C scanner
# (typeshed does not declare the attribute).
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


# msgspec's JSON decoder: about twice as fast as the standard one, and where it decodes a
# line, the value is the one json.loads gives (integers of any size stay integers: orjson's
# beyond 64 bits become floats). What it refuses (lone surrogates, NaN, 1e400) goes to the
# standard decoder, which decides.
_fast_decode: Callable[[str | bytes], Any] = msgspec.json.Decoder().decode


def _jsonl(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each line; value is _NOT_JSON for a broken line.

    Lines end at "\n" only (``\r\n`` too): JSON strings may hold U+2028, NEL and the
    other characters ``str.splitlines`` would also break at."""
    fast = _fast_decode
    for number, line in enumerate(_split_lines(text), start=1):
        if not line or line.isspace():
            continue
        try:
            decoded = fast(line)
        except (msgspec.MsgspecError, ValueError, RecursionError):
            yield number, _slow_line(line)
        else:
            yield number, decoded


def _split_lines(text: str) -> Iterator[str]:
    """``text.split("\n")``, a line at a time: format detection reads a file's first lines
    only, and splitting all of it first would copy every line."""
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def _slow_line(line: str) -> Any:
    """The value of a line msgspec refused, as json.loads reads it; _NOT_JSON if it refuses."""
    start = 0
    while line[start] in _JSON_SPACE:
        start += 1
    try:
        value, end = _scan(line, start)
    except (StopIteration, ValueError, RecursionError):  # also an integer too long
        return _NOT_JSON
    if end != len(line) and line[end:].strip(_JSON_SPACE):
        return _NOT_JSON  # something after the value, as json.loads refuses
    return value


class _Lines:
    """The JSONL reading of a file's text, parsed once whichever readers ask for it, and
    only as far as they read."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._values: list[tuple[int, Any]] = []
        self._rest: Iterator[tuple[int, Any]] | None = _jsonl(text)

    def head(self, count: int) -> Iterator[Any]:
        """The first ``count`` readable values (fewer in a shorter file), each parsed when
        it is asked for."""
        at = given = 0
        while given < count:
            if at == len(self._values):
                found = next(self._rest, None) if self._rest is not None else None
                if found is None:
                    self._rest = None
                    return
                self._values.append(found)
            value = self._values[at][1]
            at += 1
            if value is not _NOT_JSON:
                given += 1
                yield value

    def __iter__(self) -> Iterator[tuple[int, Any]]:
        if self._rest is not None:
            self._values.extend(self._rest)
            self._rest = None
        return iter(self._values)


def _detect(path: str, whole: Any, lines: _Lines) -> str:
    if (
        isinstance(whole, dict)
        and isinstance(whole.get("messages"), list)
        and ("trajectory_format" in whole or "instance_id" in whole or path.endswith(".traj.json"))
    ):
        return "mini-swe-agent"
    if (
        isinstance(whole, list)
        and whole
        and all(isinstance(x, dict) and "traj" in x for x in whole)
    ):
        return "tau-bench"
    values: list[Any] | None = None
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        values = whole["messages"]  # a provider request body
    elif isinstance(whole, dict) and isinstance(whole.get("input"), list):
        values = whole["input"]  # a Responses API request body
    elif isinstance(whole, list):
        values = whole
    elif isinstance(whole, dict) and "role" in whole:
        values = [whole]
    # A Claude Code session shows in its first records (most often the first): the rest of
    # a JSONL file is read only for the other formats (Claude Code's importer reads it its
    # own way).
    head = iter(values[:50]) if values is not None else lines.head(50)
    if any(
        isinstance(v, dict)
        and ("sessionId" in v or v.get("type") in ("summary", "user", "assistant"))
        and "role" not in v
        for v in head
    ):
        return "claude-code"
    if values is None:
        values = [v for _, v in lines if v is not _NOT_JSON]
    if values and all(isinstance(v, dict) and role_of(v) is not None for v in values):
        return _provider_of(values)
    raise NotALogError(
        f"cannot tell the format of {path}: expected a JSON array or JSONL of messages, a "
        "Claude Code session, a mini-swe-agent .traj.json or a tau-bench array; name one "
        f"with the format argument: {', '.join(LOG_FORMATS[1:])}",
        names=("format",),
    )


def _provider_of(messages: list[Any]) -> str:
    for m in messages:
        content = m.get("content")
        if ("role" not in m and "type" in m) or (
            isinstance(content, list)
            and any(
                isinstance(b, dict) and b.get("type") in ("input_text", "output_text")
                for b in content
            )
        ):
            return "openai-responses"
    for m in messages:
        if m.get("role") == "tool" or m.get("tool_calls"):
            return "openai"
        content = m.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result", "compaction")
            for b in content
        ):
            return "anthropic"
    return "openai"


def _require_messages(values: Any, path: str, what: str) -> list[dict[str, Any]]:
    if not isinstance(values, list):
        raise ImportFormatError(f"{path}: expected {what} to be a list of messages")
    for i, m in enumerate(values):
        if not isinstance(m, dict) or role_of(m) is None:
            raise ImportFormatError(
                f"{path}: {what} item {i} is not a message with a 'role' (or a Responses item)"
            )
    return [dict(m) for m in values]


def _plain(whole: Any, lines: _Lines, stem: str, fmt: str, path: str) -> LoadedConversation:
    notes: list[str] = []
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        # A saved request body: its messages, and Anthropic's top-level system prompt first.
        values = list(whole["messages"])
        system = whole.get("system")
        if isinstance(system, (str, list)) and system:
            values.insert(0, {"role": "system", "content": system})
            notes.append("the request's system prompt is stored as the first (system) message")
        return LoadedConversation(stem, _require_messages(values, path, "messages"), fmt, notes)
    if isinstance(whole, dict) and isinstance(whole.get("input"), list):
        # A saved Responses API request body: its input items, the instructions first.
        values = list(whole["input"])
        instructions = whole.get("instructions")
        if isinstance(instructions, str) and instructions:
            values.insert(0, {"type": "message", "role": "developer", "content": instructions})
            notes.append("the request's instructions are stored as the first (developer) message")
        return LoadedConversation(stem, _require_messages(values, path, "input"), fmt, notes)
    if whole is _NOT_JSON or isinstance(whole, dict):
        values = []
        broken = 0
        for _, v in lines:
            if v is _NOT_JSON:
                broken += 1
            else:
                values.append(v)
        if broken:
            notes.append(f"{broken} {UNREADABLE}")
    else:
        values = whole
    return LoadedConversation(stem, _require_messages(values, path, "the file"), fmt, notes)


def _mini_swe_agent(whole: Any, path: str) -> LoadedConversation:
    if not isinstance(whole, dict) or not isinstance(whole.get("messages"), list):
        raise ImportFormatError(f"{path}: a mini-swe-agent trajectory is an object with 'messages'")
    messages = _require_messages(whole["messages"], path, "messages")
    exits = 0
    for m in messages:
        if m["role"] == "exit":
            # The runtime's final submission, not a provider role: keep it as injected input.
            m["role"] = "user"
            m["meta"] = True
            m["source_role"] = "exit"
            exits += 1
    notes = [f"{exits} 'exit' messages stored as meta user messages"] if exits else []
    return LoadedConversation(conversation_name(path), messages, "mini-swe-agent", notes)


def _tau_bench(whole: Any, stem: str, path: str) -> list[LoadedConversation]:
    if not isinstance(whole, list):
        raise ImportFormatError(f"{path}: tau-bench trajectories are a JSON array")
    items = []
    for i, run in enumerate(whole):
        if not isinstance(run, dict) or "traj" not in run:
            raise ImportFormatError(f"{path}: element {i} has no 'traj'")
        task, trial = run.get("task_id", i), run.get("trial", 0)
        items.append(
            LoadedConversation(
                f"{stem}-task{task}-trial{trial}",
                _require_messages(run["traj"], path, f"element {i} traj"),
                "tau-bench",
            )
        )
    return items


class _ClaudeMessage(msgspec.Struct):
    role: Any = None
    content: Any = None
    id: Any = None


class _ClaudeRecord(msgspec.Struct, rename="camel"):
    """The fields of a Claude Code record the importer reads; msgspec steps over the rest
    of the line (a tool's result again in ``toolUseResult``, usage, cwd ...) without
    building it. A missing field reads as None, as ``dict.get`` reads it."""

    type: Any = None
    is_sidechain: Any = None
    message: _ClaudeMessage | None = None  # anything but an object: the line is read whole
    uuid: Any = None
    is_meta: Any = None
    is_compact_summary: Any = None


_claude_decode: Callable[[bytes], _ClaudeRecord] = msgspec.json.Decoder(_ClaudeRecord).decode


def _claude_record(value: dict[str, Any]) -> _ClaudeRecord:
    """The fields read of a record decoded whole (a line the typed read refused)."""
    message = value.get("message")
    return _ClaudeRecord(
        value.get("type"),
        value.get("isSidechain"),
        _ClaudeMessage(message.get("role"), message.get("content"), message.get("id"))
        if isinstance(message, dict)
        else None,
        value.get("uuid"),
        value.get("isMeta"),
        value.get("isCompactSummary"),
    )


def _claude_lines(data: bytes) -> Iterator[_ClaudeRecord | None]:
    """The record of each non-blank line of ``data`` (a log's text in UTF-8); None for a line
    that is not a JSON object.

    The lines are split and decoded as bytes: msgspec reads UTF-8 as it is, where a line of
    text would be copied out of the file's text (four bytes a character once an emoji is in
    it) and encoded to UTF-8 again. A line msgspec refuses is read as text, so the rules of
    text apply to it: blank in Unicode's sense (U+3000, U+2028 ...) is skipped, the rest is
    read as `_jsonl` reads a line, and the same rules apply to the value. What the typed read
    refuses (a lone surrogate, NaN, a field that is not what it reads) goes the same way. (The
    typed read also takes a line whose skipped fields only json.loads refuses, an integer of
    over 4,300 digits: the fields it reads are the ones json.loads would give.)"""
    decode = _claude_decode
    for line in data.split(b"\n"):
        if not line or line.isspace():  # ASCII blanks; what else text calls blank, below
            continue
        try:
            yield decode(line)
            continue
        except msgspec.ValidationError:  # JSON, but not a record's shape: read it whole
            try:
                value = _fast_decode(line)
            except (msgspec.MsgspecError, ValueError, RecursionError):
                value = _slow_line(line.decode("utf-8"))
        except (msgspec.MsgspecError, ValueError, RecursionError):
            text = line.decode("utf-8")  # msgspec's parser refused it whole as well
            if text.isspace():
                continue
            value = _slow_line(text)
        yield _claude_record(value) if isinstance(value, dict) else None


def _claude_code(data: bytes, stem: str) -> LoadedConversation:
    """One message per user/assistant record of the main chain, named after the file.

    A resumed session is a new file that repeats the earlier session's records (with the
    earlier ``sessionId``) before its own, so the file, not the session id, names the
    conversation: each file is its own conversation with its full history. ``data`` is the
    file's text in UTF-8 (without a byte order mark).
    """
    records: list[_ClaudeRecord] = []
    broken = 0
    for record in _claude_lines(data):
        if record is None:
            broken += 1
        elif record.type in _CLAUDE_MESSAGE_TYPES:
            records.append(record)
    main = [r for r in records if not r.is_sidechain]
    notes = [f"{broken} {UNREADABLE}"] if broken else []
    if not main and records:
        # A subagent's own log (agent-*.jsonl): every record is a sidechain of the parent
        # session, and together they are this file's conversation.
        main = records
        notes.append(f"subagent log: its {len(records)} sidechain records form the conversation")
    elif len(main) < len(records):
        notes.append(f"{len(records) - len(main)} sidechain records skipped")
    return LoadedConversation(stem, _claude_messages(main), "claude-code", notes)


def _claude_messages(records: list[_ClaudeRecord]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for record in records:
        message = record.message
        if message is None or message.role not in _CLAUDE_MESSAGE_TYPES:
            continue
        role, content = message.role, message.content
        new: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant" and not isinstance(content, list):
            new["content"] = [{"type": "text", "text": content or ""}]
        record_id = record.uuid
        if isinstance(record_id, str) and record_id:
            new["id"] = record_id
        api_id = message.id
        if role == "assistant" and isinstance(api_id, str):
            new[SPLIT_KEY] = api_id  # Claude Code writes one record per content block
        if role == "user" and (record.is_meta or record.is_compact_summary or _injected(content)):
            new["meta"] = True
        messages.append(new)
    return messages


def _injected(content: Any) -> bool:
    if isinstance(content, str):
        return is_injected_text(content)
    if isinstance(content, list):
        texts = [
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]
        others = [
            b
            for b in content
            if isinstance(b, dict) and b.get("type") not in ("text", "tool_result")
        ]
        return (
            bool(texts)
            and not others
            and all(isinstance(t, str) and is_injected_text(t) for t in texts)
        )
    return False
