"""What a placeholder shows of the text it stands for, and the cut form of a fresh result.

A placeholder's preview is made of parts chosen by `ReplayPolicy.preview_shape`: the head,
the tail, the lines that report an error and the file paths the text mentions, each bounded
and always rendered in that order, so the same text and shape give the same bytes.

A fresh tool result over `ReplayPolicy.fresh_cap_chars` is replaced, even while fresh, by its
cut form: a header that states its size and the exact ``conversation_read`` call that returns
what is not shown, then its head, a marker and its tail. The header says how many chars of
each end are shown, so a replay of a replay reads the two ends back exactly (`parse_cut`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = [
    "CUT_MARKER",
    "MAX_PREVIEW_ERRORS",
    "MAX_PREVIEW_PATHS",
    "PREVIEW_PARTS",
    "Cut",
    "cut_text",
    "error_lines",
    "parse_cut",
    "paths_in",
    "preview_parts",
    "render_preview",
]

CUT_MARKER = "[cut tool result]"
PREVIEW_PARTS = ("head", "tail", "errors", "paths")  # the order they are rendered in
MAX_PREVIEW_ERRORS = 3  # error lines a preview quotes
MAX_ERROR_LINE_CHARS = 160
MAX_PREVIEW_PATHS = 5  # paths a preview names
MAX_PATH_CHARS = 120
_SCAN_CHARS = 200_000  # errors and paths are looked for in this much of each end

# A line that reports a failure, in the words compilers, test runners, shells and Python use.
_ERROR_LINE = re.compile(
    r"\w(?:Error|Exception)\b|(?i:\b(?:error|errors|exception|traceback|failed|failure|"
    r"fatal|panic|denied|not found|no such file|cannot|could not|segmentation fault)\b)"
)
_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|swift|m|scala|"
    "md|rst|txt|json|jsonl|yaml|yml|toml|cfg|ini|conf|env|sh|bash|zsh|sql|html|css|scss|"
    "xml|csv|tsv|lock|log|pdf|docx|xlsx|pptx|proto|tf|gradle|vue|svelte|lua|pl|r|jl|dart"
)
# A path with a slash (absolute, ./, ~/ or relative), or a bare file name with a known
# extension; never the tail of a URL (no match starts right after "/", ":" or a word char).
_PATH = re.compile(
    r"(?<![\w.~/:@-])"
    r"(?:(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*[\w]"
    rf"|[\w-][\w.-]*\.(?:{_EXTENSIONS}))"
    r"(?![\w/])"
)


def preview_parts(shape: object) -> tuple[str, ...]:
    """``shape`` (any collection of `PREVIEW_PARTS` names) in rendering order; raises
    ValueError naming what is not a part."""
    if isinstance(shape, str) or not hasattr(shape, "__iter__"):
        raise ValueError(
            f"preview_shape must be a collection of {', '.join(PREVIEW_PARTS)}, got {shape!r}"
        )
    names = set()
    for name in shape:
        if name not in PREVIEW_PARTS:
            raise ValueError(
                f"preview_shape holds {name!r}; its parts are {', '.join(PREVIEW_PARTS)}"
            )
        names.add(name)
    return tuple(p for p in PREVIEW_PARTS if p in names)


def error_lines(text: str) -> list[str]:
    """The first `MAX_PREVIEW_ERRORS` distinct lines of ``text`` that report a failure,
    stripped and cut to `MAX_ERROR_LINE_CHARS`."""
    found: list[str] = []
    scanned = text if len(text) <= 2 * _SCAN_CHARS else text[:_SCAN_CHARS] + text[-_SCAN_CHARS:]
    for line in scanned.splitlines():
        if len(found) >= MAX_PREVIEW_ERRORS:
            break
        if _ERROR_LINE.search(line):
            cut = line.strip()[:MAX_ERROR_LINE_CHARS]
            if cut and cut not in found:
                found.append(cut)
    return found


def paths_in(text: str) -> list[str]:
    """The first `MAX_PREVIEW_PATHS` distinct file paths ``text`` mentions, in order."""
    found: list[str] = []
    scanned = text if len(text) <= 2 * _SCAN_CHARS else text[:_SCAN_CHARS] + text[-_SCAN_CHARS:]
    for match in _PATH.finditer(scanned):
        path = match.group().rstrip(".")
        if len(path) < 3 or len(path) > MAX_PATH_CHARS or path in found:
            continue
        if not any(c.isalpha() for c in path):
            continue  # 1/2, 10/100: a ratio, not a path
        found.append(path)
        if len(found) >= MAX_PREVIEW_PATHS:
            break
    return found


def render_preview(text: str, shape: tuple[str, ...], chars: int) -> list[str]:
    """The preview sentences of ``text``: each part of ``shape`` that has something to show."""
    out: list[str] = []
    if not text:
        return out
    longer = len(text) > chars
    if "head" in shape and chars:
        out.append(f"Head: {_q(text[:chars])}{'...' if longer else ''}")
    if "tail" in shape and chars and (longer or "head" not in shape):
        out.append(f"Tail: {'...' if longer else ''}{_q(text[-chars:])}")
    if "errors" in shape:
        errors = error_lines(text)
        if errors:
            out.append("Error lines: " + " | ".join(_q(e) for e in errors))
    if "paths" in shape:
        paths = paths_in(text)
        if paths:
            out.append("Paths: " + ", ".join(_q(p) for p in paths))
    return out


@dataclass(frozen=True)
class Cut:
    """A cut form read back: the original's size and lines, and the two ends it shows."""

    size: int
    lines: int
    head: str
    tail: str

    def visible(self) -> str:
        """What the cut form shows of the original: its head and tail, a newline between."""
        return f"{self.head}\n{self.tail}" if self.tail else self.head


def cut_text(
    text: str, name: str, lines: int, cap: int, keep: int, call: str, *, error: bool
) -> str:
    """The cut form of a fresh result ``text`` (over ``cap`` chars): the first and last
    ``keep // 2`` chars, and ``call``, which returns the rest."""
    head = text[: keep - keep // 2]
    tail = text[len(text) - keep // 2 :] if keep // 2 else ""
    hidden = len(text) - len(head) - len(tail)
    header = (
        f"{CUT_MARKER} Output of tool {_q(name)} ({len(text):,} chars, {lines:,} "
        f"line{'' if lines == 1 else 's'}) is over the {cap:,}-char cap for a fresh result"
        + (" (it was an error result)" if error else "")
        + f"; shown: its first {len(head):,} and last {len(tail):,} chars. "
        f"The rest: {call}"
    )
    return f"{header}\n{head}\n[... {hidden:,} chars not shown ...]\n{tail}"


_CUT = re.compile(
    re.escape(CUT_MARKER) + r' Output of tool "(?:[^"\\]|\\.)*" \(([\d,]+) chars, ([\d,]+) '
    r"lines?\) is over the [\d,]+-char cap for a fresh result(?: \(it was an error result\))?; "
    r"shown: its first ([\d,]+) and last ([\d,]+) chars\. The rest: conversation_read\([^\n]*\)\n"
)


def parse_cut(text: str) -> Cut | None:
    """The `Cut` a cut form states, or None for any other text."""
    match = _CUT.match(text)
    if match is None:
        return None
    size, lines, h, t = (int(g.replace(",", "")) for g in match.groups())
    body = text[match.end() :]
    if len(body) < h + t:
        return None
    tail = body[len(body) - t :] if t else ""
    return Cut(size, lines, body[:h], tail)


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
