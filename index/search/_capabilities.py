"""The capability index: one line per tool in the prompt, full schemas only on request.

A request that carries every tool schema of every connected server pays for all of them on
every call. `CapabilityIndex` keeps the definitions (MCP, OpenAI or Anthropic form, ours and
other servers'), renders a compact one-line-per-tool index for the prompt, finds tools by
what they do (BM25 through an in-memory Tantivy index), and hands back the full schema of
the tools a model activates, in the provider's form.

The rendered index only ever grows at its end: a tool that arrives later is appended, and a
name that collides with an earlier one is prefixed with its server, so the lines (and the
provider's prompt cache over them) never move.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import tantivy

from leanreplay.placeholders import check_int

from .._errors import InvalidArgumentError
from .._shapes import SCHEMA_FORMATS, tool_shape
from ._tantivy import MIN_WRITER_HEAP, query_text
from ._vocabulary import EXPANSION_WEIGHT, FILLER, related_words

__all__ = [
    "SCHEMA_FORMATS",
    "Capability",
    "CapabilityIndex",
    "summary_line",
    "tool_problem",
    "tool_words",
]

SUMMARY_CHARS = 40  # a rendered line stays one short headline
MIN_HEADLINE = 18  # a clause cut never leaves less than this
# Where a clause ends: the words before it say what the tool does, the rest where and how.
_CLAUSE = re.compile(
    r"[,;:(]| - | (?:in|into|on|from|with|within|that|which|as|for|by|using|via|or|and|to|"
    r"including|without|across|between|along)\b"
)
_DANGLING_WORDS = "a an the of to in on for and or with by from as at its your"
_DANGLING = frozenset(_DANGLING_WORDS.split())  # never the last word of a cut headline
MAX_TOOLS = 10_000  # a hostile upstream cannot grow the index without bound
MAX_NAME_CHARS = 64  # the longest name every provider accepts (Anthropic: 64)
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_SERVER_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Field weights: a word in the name says more about the tool than one in a parameter.
_BOOSTS = {"name": 2.0, "summary": 1.5, "description": 1.0, "params": 0.6, "server": 1.0}


@dataclass(frozen=True)
class Capability:
    """One tool as the index knows it: its exposed name and its full definition."""

    name: str
    server: str
    original_name: str
    description: str
    input_schema: Mapping[str, Any]
    annotations: Mapping[str, Any] | None = None

    def schema(self, format: str = "mcp") -> dict[str, Any]:
        """The tool's definition in ``format`` (one of `SCHEMA_FORMATS`)."""
        return tool_shape(format, self.name, self.description, self.input_schema, self.annotations)


def tool_words(name: str) -> str:
    """``browser_takeScreenshot`` -> ``browser take screenshot`` (and the name itself)."""
    parts = [p for p in re.split(r"[_\-.\s]+", _CAMEL.sub(" ", name)) if p]
    return " ".join([name, *(p.lower() for p in " ".join(parts).split())])


def summary_line(description: str, limit: int = SUMMARY_CHARS) -> str:
    """A headline for ``description``: its first sentence, on one line, at most ``limit``
    chars. A longer sentence is cut where a clause ends (before "in", "with", "that", a comma,
    ...), so the headline keeps what the tool does and drops where and how; only a sentence
    with no such boundary is cut at a word, with an ellipsis."""
    text = " ".join(description.split())
    match = re.search(r"(?<=[.!?])\s", text)
    if match:
        text = text[: match.start()]
    text = text.rstrip(".")
    if len(text) <= limit:
        return _printable(text)
    strong: list[int] = []
    weak: list[int] = []
    for m in _CLAUSE.finditer(text):
        head = text[: m.start()]
        if MIN_HEADLINE <= m.start() <= limit and head.count("(") == head.count(")"):
            (weak if m.group().startswith(" ") and m.group() != " - " else strong).append(m.start())
    if strong or weak:
        return _printable(text[: (strong or weak)[-1]].rstrip(" ,;:-"))
    words = text[:limit].split(" ")[:-1] or [text[: limit - 1]]  # whole words only
    while len(words) > 1 and words[-1].lower() in _DANGLING:
        words.pop()
    return _printable(" ".join(words).rstrip(" ,;:-") + "…")


def _printable(text: str) -> str:
    """``text`` with every unprintable character (controls such as BEL and ESC, bidi
    overrides) written as ``\\uXXXX``: a description is another server's text, and what
    the index renders goes into the system prompt and onto terminals."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escaped(ch) for ch in text)


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _definition(tool: object) -> Mapping[str, Any]:
    """A tool definition as a mapping; SDK objects (anything with ``model_dump``) too."""
    dump = getattr(tool, "model_dump", None)
    if callable(dump):
        tool = dump(by_alias=True, exclude_none=True, mode="json")
    if not isinstance(tool, Mapping):
        raise InvalidArgumentError(
            f"a tool definition must be an object, got {type(tool).__name__}"
        )
    return tool


def _parse(tool: object) -> tuple[str, str, Mapping[str, Any], Mapping[str, Any] | None]:
    """(name, description, input schema, annotations) from any of the three forms."""
    d = _definition(tool)
    if d.get("type") == "function" and isinstance(d.get("function"), Mapping):
        fn = d["function"]
        name, description, schema = fn.get("name"), fn.get("description"), fn.get("parameters")
    elif "input_schema" in d:
        name, description, schema = d.get("name"), d.get("description"), d.get("input_schema")
    elif "inputSchema" in d:
        name, description, schema = d.get("name"), d.get("description"), d.get("inputSchema")
    elif d.get("type") == "function" and "parameters" in d:  # a Responses API function tool
        name, description, schema = d.get("name"), d.get("description"), d.get("parameters")
    else:
        raise InvalidArgumentError(
            "a tool definition needs MCP `inputSchema`, Anthropic `input_schema`, OpenAI "
            f"`function.parameters` or Responses `parameters`; got keys {sorted(d)[:8]}"
        )
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgumentError(
            f"tool name {name!r} is not 1-64 letters, digits, '_', '-' or '.'"
        )
    if schema is None:
        schema = {"type": "object", "properties": {}}
    if not isinstance(schema, Mapping):
        raise InvalidArgumentError(f"tool {name}: the input schema must be an object")
    annotations = d.get("annotations")
    return (
        name,
        description if isinstance(description, str) else "",
        schema,
        annotations if isinstance(annotations, Mapping) else None,
    )


def tool_problem(tool: object) -> str | None:
    """Why `CapabilityIndex.add` would refuse ``tool`` (a bad name, no schema, not an
    object), or None: the gateway leaves such a tool out and names it, instead of losing the
    whole server."""
    try:
        _parse(tool)
    except InvalidArgumentError as exc:
        return str(exc)
    return None


def _expanded(text: str) -> str:
    """Query syntax for ``text`` (already made safe by `query_text`): its words, camelCase
    and snake_case split, filler dropped, plus the related words of each at a lower weight."""
    phrases = re.findall(r'"[^"]*"', text)
    words: list[str] = []
    for raw in re.sub(r'"[^"]*"', " ", text).split():
        parts = tool_words(raw).split()[1:] if re.search(r"[_A-Z-]", raw) else [raw.lower()]
        words += [p for p in re.findall(r"[\w]+", " ".join(parts)) if p not in FILLER]
    if not words and not phrases:
        words = [w.lower() for w in re.findall(r"[\w]+", text)]  # all filler: search it anyway
    related = sorted({r for w in words for r in related_words(w)} - set(words))
    boosted = [f"{r}^{EXPANSION_WEIGHT}" for r in related]
    return " ".join([*phrases, *dict.fromkeys(words), *boosted])


def _param_text(schema: Mapping[str, Any]) -> str:
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ""
    parts = []
    for key, value in props.items():
        parts.append(tool_words(str(key)))
        if isinstance(value, Mapping) and isinstance(value.get("description"), str):
            parts.append(value["description"])
    return " ".join(parts)


def _schema() -> Any:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("pos", stored=True, indexed=True)
    for name in _BOOSTS:
        sb.add_text_field(name, stored=False, tokenizer_name="en_stem")
    return sb.build()


@dataclass
class CapabilityIndex:
    """Tool definitions from any number of servers, searchable and renderable.

    Args:
        tools: definitions in MCP, OpenAI or Anthropic form (dicts or SDK objects).
        server: the server these ``tools`` belong to.
        reserved: names no tool is exposed under (the meta-tools that serve the index).

    More servers join with `add`. Names stay unique: a tool whose name is taken (or
    reserved) is exposed as ``<server>_<name>``.
    """

    tools: Iterable[object] = ()
    server: str = "leanreplay"
    reserved: frozenset[str] = frozenset()
    _items: list[Capability] = field(default_factory=list, init=False, repr=False)
    _by_name: dict[str, Capability] = field(default_factory=dict, init=False, repr=False)
    _index: Any = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.add(self.tools, server=self.server)
        self.tools = ()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def capabilities(self) -> list[Capability]:
        """Every tool, in the order the index renders them."""
        return list(self._items)

    def add(self, tools: Iterable[object], *, server: str) -> list[str]:
        """Append ``server``'s tools (sorted by name, so the order never depends on how a
        server lists them); returns the exposed names. A tool already known under the same
        server and name is kept as it was."""
        server_name = _SERVER_CHARS.sub("-", server).strip("-")
        if not server_name:
            raise InvalidArgumentError(f"server name {server!r} has no letters or digits")
        parsed = sorted((_parse(t) for t in tools), key=lambda p: p[0])
        exposed = []
        with self._lock:
            known = {(c.server, c.original_name): c.name for c in self._items}
            for name, description, schema, annotations in parsed:
                if (server_name, name) in known:
                    exposed.append(known[(server_name, name)])
                    continue
                if len(self._items) >= MAX_TOOLS:
                    raise InvalidArgumentError(
                        f"the capability index holds at most {MAX_TOOLS} tools"
                    )
                unique = name
                if self._taken(unique):
                    unique = f"{server_name}_{name}"[:MAX_NAME_CHARS]
                    n = 2
                    while self._taken(unique):
                        unique = f"{server_name}_{name}"[: MAX_NAME_CHARS - 3] + f"_{n}"
                        n += 1
                cap = Capability(unique, server_name, name, description, schema, annotations)
                self._items.append(cap)
                self._by_name[unique] = cap
                known[(server_name, name)] = unique
                exposed.append(unique)
            self._index = None  # rebuilt on the next search
        return exposed

    def _taken(self, name: str) -> bool:
        return name in self._by_name or name in self.reserved

    def get(self, name: str) -> Capability:
        try:
            return self._by_name[name]
        except KeyError:
            raise InvalidArgumentError(
                f"no tool named {name!r}; find one with tool_search, then activate it by the "
                "exact name it shows"
            ) from None

    def render(self) -> str:
        """One line per tool, grouped by server in arrival order; only ever grows at the end."""
        lines: list[str] = []
        current = None
        for cap in self._items:
            if cap.server != current:
                lines.append(f"[{cap.server}]")
                current = cap.server
            summary = summary_line(cap.description)
            lines.append(f"{cap.name}: {summary}" if summary else cap.name)
        return "\n".join(lines)

    def _searcher(self) -> tuple[Any, Any]:
        with self._lock:
            if self._index is None:
                schema = _schema()
                index = tantivy.Index(schema)
                writer = index.writer(heap_size=MIN_WRITER_HEAP, num_threads=1)
                for pos, cap in enumerate(self._items):
                    values = {
                        "pos": pos,
                        "name": tool_words(cap.original_name),
                        "server": tool_words(cap.server),
                        "summary": summary_line(cap.description),
                        "description": cap.description,
                        "params": _param_text(cap.input_schema),
                    }
                    writer.add_document(tantivy.Document.from_dict(values, schema))
                writer.commit()
                writer.wait_merging_threads()
                index.reload()
                self._index = index
            return self._index, self._index.searcher()

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` best tools for ``query`` as ``{name, server, summary, score}``."""
        check_int("limit", limit, minimum=1, maximum=50, error=InvalidArgumentError)
        index, searcher = self._searcher()
        if not self._items:
            return []
        parsed, _errors = index.parse_query_lenient(
            _expanded(query_text(query)), default_field_names=list(_BOOSTS), field_boosts=_BOOSTS
        )
        out = []
        for score, address in searcher.search(parsed, limit=limit).hits:
            cap = self._items[searcher.doc(address)["pos"][0]]
            out.append(
                {
                    "name": cap.name,
                    "server": cap.server,
                    "summary": summary_line(cap.description),
                    "score": round(float(score), 3),
                }
            )
        return out

    def schemas(self, names: Iterable[str], format: str = "mcp") -> list[dict[str, Any]]:
        """The full definitions of ``names`` in ``format``, in the order given."""
        return [self.get(n).schema(format) for n in names]
