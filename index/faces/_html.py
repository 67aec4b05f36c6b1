"""HTML for `leanreplay view`: messages, cards, the size chart and the page frame.

Everything that comes from a message, a file name, an id or a log is escaped here, through
`esc` (text and attribute values) and `href` (links built from our own routes and quoted
parameters); no other path puts stored text into a page. Images are shown only as ``data:``
URLs of raster types whose payload is checked to be base64.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from leanreplay.placeholders import (
    is_meta,
    is_placeholder,
    json_chars,
    load_input,
    nested_deeper,
    result_slots,
)

__all__ = [
    "CSS",
    "JS",
    "card_html",
    "esc",
    "href",
    "message_html",
    "page",
    "plural",
    "pretty_json",
    "size_chart",
    "snippet_html",
]

RASTER = {"image/png", "image/jpeg", "image/gif", "image/webp"}
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
_DATA_URL = re.compile(r"^data:(image/[a-z+.-]+);base64,(.*)$", re.IGNORECASE | re.DOTALL)
OPEN_BELOW = 600  # tool results up to this many chars are shown open
MAX_DRAWN_NESTING = 20  # tool results inside tool results drawn this deep; deeper: a note


def esc(value: object) -> str:
    """Text or an attribute value, escaped (quotes included)."""
    return html.escape(str(value), quote=True)


def href(path: str, **params: object) -> str:
    """A link to one of our routes, parameters quoted; escaped for an attribute."""
    clean = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return esc(path + ("?" + urlencode(clean) if clean else ""))


def chars(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def snippet_html(snippet: str) -> str:
    """A search snippet: escaped, then its ``**word**`` highlights as <mark>."""
    parts = esc(snippet).split("**")
    return "".join(f"<mark>{p}</mark>" if i % 2 else p for i, p in enumerate(parts))


def card_html(card: str) -> str:
    """An attachment card (one line, ``key=value | ...``) as a small box."""
    fields = [f.strip() for f in card.split(" | ")]
    head = fields[0] if fields else card
    rest = "".join(f"<li>{esc(f)}</li>" for f in fields[1:])
    return f'<div class="card"><div class="card-head">{esc(head)}</div><ul>{rest}</ul></div>'


def _image(media: object, data: object) -> str:
    if (
        isinstance(media, str)
        and media.lower() in RASTER
        and isinstance(data, str)
        and _BASE64.match(data[:200_000])
        and _BASE64.match(data)
    ):
        src = f"data:{media.lower()};base64,{''.join(data.split())}"
        return f'<img class="inline" alt="image from the message" src="{esc(src)}">'
    return f'<div class="note">image ({esc(media)}) not shown: not a base64 raster image</div>'


def pretty_json(value: Any) -> str:
    """``value`` as JSON for a page: indented while it nests no deeper than the placeholders'
    inspection limit (the indenting encoder recurses in Python), on one line deeper, and as a
    note past what any encoder reaches (the raw message link shows its bytes)."""
    try:
        if not nested_deeper(value):
            return json.dumps(value, ensure_ascii=False, indent=2)
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return f"(nested too deeply to draw: {json_chars(value):,} chars of JSON; open it raw)"


def _text_of(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for block in content:
            if isinstance(block, Mapping):
                for key in ("text", "content", "thinking"):
                    if isinstance(block.get(key), str):
                        total += len(block[key])
        return total
    return 0


Placeholder = Callable[[str, str | None], str]  # (text, tool_call_id) -> html


def _result(
    label: str,
    content: Any,
    *,
    error: bool,
    cards: Mapping[int, str],
    placeholder: Placeholder | None,
    call_id: str | None,
    depth: int = 0,
) -> str:
    size = _text_of(content)
    flag = ' <span class="badge err">error</span>' if error else ""
    if placeholder is not None and isinstance(content, str) and is_placeholder(content):
        return f'<div class="result">{placeholder(content, call_id)}</div>'
    body = _content(content, cards=cards, placeholder=placeholder, depth=depth)
    opened = " open" if size <= OPEN_BELOW else ""
    return (
        f'<details class="result"{opened}><summary>{label}{flag} '
        f'<span class="size">{chars(size)} chars</span></summary>{body}</details>'
    )


def _block(
    block: Any,
    index: int,
    *,
    cards: Mapping[int, str],
    placeholder: Placeholder | None,
    depth: int = 0,
) -> str:
    if isinstance(block, str):
        return f'<pre class="text">{esc(block)}</pre>'
    if not isinstance(block, Mapping):
        return f'<pre class="text">{esc(pretty_json(block))}</pre>'
    kind = block.get("type")
    card = cards.get(index)
    if kind == "text":
        text = str(block.get("text", ""))
        if text.startswith("[attachment]"):
            return card_html(text)
        if placeholder is not None and is_placeholder(text):
            return placeholder(text, None)
        return f'<pre class="text">{esc(text)}</pre>'
    if kind in ("image", "image_url"):
        if kind == "image":
            source = block.get("source")
            source = source if isinstance(source, Mapping) else {}
            if source.get("type") == "base64":
                shown = _image(source.get("media_type"), source.get("data"))
            else:
                shown = (
                    f'<div class="note">image at {esc(source.get("url", "?"))} (not fetched)</div>'
                )
        else:
            image = block.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            match = _DATA_URL.match(url) if isinstance(url, str) else None
            if match:
                shown = _image(match.group(1), match.group(2))
            else:
                shown = f'<div class="note">image at {esc(url)} (not fetched)</div>'
        return shown + (card_html(card) if card else "")
    if kind in ("document", "file"):
        if card:
            return card_html(card)
        return f'<div class="note">{esc(kind)} block ({chars(json_chars(block))} chars)</div>'
    if kind == "tool_use":
        args = pretty_json(block.get("input"))
        return (
            f'<details class="call" open><summary>call <b>{esc(block.get("name"))}</b> '
            f'<code>{esc(block.get("id"))}</code></summary><pre class="text">{esc(args)}</pre>'
            "</details>"
        )
    if kind == "tool_result":
        call_id = block.get("tool_use_id")
        if depth >= MAX_DRAWN_NESTING:
            return (
                f'<div class="note">tool results nested over {MAX_DRAWN_NESTING} deep are not '
                "drawn; open the message raw</div>"
            )
        return _result(
            f"result of <code>{esc(call_id)}</code>",
            block.get("content"),
            error=bool(block.get("is_error")),
            cards={},
            placeholder=placeholder,
            call_id=call_id if isinstance(call_id, str) else None,
            depth=depth + 1,
        )
    if kind in ("thinking", "redacted_thinking"):
        text = str(block.get("thinking")) if kind == "thinking" else "(redacted)"
        return (
            f'<details class="thinking"><summary>{esc(kind)} '
            f'<span class="size">{chars(len(str(text)))} chars</span></summary>'
            f'<pre class="text">{esc(text)}</pre></details>'
        )
    dump = pretty_json(block)
    return (
        f'<details class="other"><summary>{esc(kind)} block</summary>'
        f'<pre class="text">{esc(dump)}</pre></details>'
    )


def _content(
    content: Any, *, cards: Mapping[int, str], placeholder: Placeholder | None, depth: int = 0
) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        if placeholder is not None and is_placeholder(content):
            return placeholder(content, None)
        return f'<pre class="text">{esc(content)}</pre>'
    if isinstance(content, list):
        return "".join(
            _block(b, i, cards=cards, placeholder=placeholder, depth=depth)
            for i, b in enumerate(content)
        )
    return f'<pre class="text">{esc(pretty_json(content))}</pre>'


def message_html(
    message: Mapping[str, Any],
    *,
    position: str,
    anchor: str,
    cards: Mapping[int, str] | None = None,
    placeholder: Placeholder | None = None,
    extra: str = "",
    target: bool = False,
) -> str:
    """One message: a header (position, id, role, badges) and its content."""
    role = str(message.get("role", "?"))
    badges = []
    mid = message.get("id")
    if is_meta(message):
        badges.append('<span class="badge">meta</span>')
    if isinstance(mid, str) and mid.startswith("fold-") and mid.endswith("-summary"):
        badges.append('<span class="badge fold">fold summary</span>')
    cards = cards or {}
    slots = result_slots(message)
    if role == "tool" or (slots and all(s.block is not None for s in slots) and role == "user"):
        kind = "tool"
    else:
        kind = role
    parts = []
    if role == "tool":
        call_id = message.get("tool_call_id")
        parts.append(
            _result(
                f"result of <code>{esc(call_id)}</code>",
                message.get("content"),
                error=bool(message.get("is_error")),
                cards=cards,
                placeholder=placeholder,
                call_id=call_id if isinstance(call_id, str) else None,
            )
        )
    else:
        parts.append(_content(message.get("content"), cards=cards, placeholder=placeholder))
    for call in message.get("tool_calls") or ():
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        arguments = function.get("arguments")
        try:
            shown = pretty_json(load_input(str(arguments)))
        except ValueError:  # not JSON, or too deep to parse: shown as it was sent
            shown = str(arguments)
        parts.append(
            f'<details class="call" open><summary>call <b>{esc(function.get("name"))}</b> '
            f'<code>{esc(call.get("id"))}</code></summary><pre class="text">{esc(shown)}</pre>'
            "</details>"
        )
    if message.get("type") and "role" not in message:  # Responses API items
        parts = [f'<pre class="text">{esc(pretty_json(message))}</pre>']
    cls = f"msg role-{esc(kind)}" + (" target" if target else "")
    id_attr = ' id="target"' if target else f' id="{esc(anchor)}"'
    return (
        f'<article class="{cls}"{id_attr} data-id="{esc(mid)}">'
        f'<header><span class="pos">{esc(position)}</span> <b>{esc(role)}</b> '
        f'<code class="mid">{esc(mid)}</code> {" ".join(badges)}{extra}</header>'
        f"{''.join(parts)}</article>"
    )


# the size chart


def size_chart(
    points: Sequence[Mapping[str, Any]],
    *,
    threshold: int,
    budget_chars: int | None,
    snapshots: Sequence[Mapping[str, Any]],
    link: Callable[[int], str] | None = None,
    width: int = 1060,
    height: int = 380,
) -> str:
    """The sawtooth as an SVG: replay size per turn (with placeholders, and with the fold
    alone) against the unfolded size, the fold threshold and the budget; snapshots as dots.

    Every data point is a ``<circle>`` carrying its numbers in ``data-`` attributes.
    """
    if not points:
        return '<p class="note">No turns yet.</p>'
    left, right, top, bottom = 70, 250, 20, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    turns = max(p["turn"] for p in points)
    lean_max = max(
        [p["replay_chars_fold_only"] for p in points]
        + [threshold, budget_chars or 0]
        + [int(s.get("chars") or 0) for s in snapshots]
    )
    unfolded_max = max(p["stored_chars"] for p in points)
    clipped = unfolded_max > 2 * lean_max
    top_value = (lean_max if clipped else max(lean_max, unfolded_max)) * 1.05
    step = _nice_step(top_value / 5)
    y_max = max(step * -(-int(top_value) // step), 1)

    def x(turn: float) -> float:
        return float(left + (plot_w * (turn - 1) / max(turns - 1, 1)))

    def y(value: float) -> float:
        return top + plot_h - plot_h * min(value, y_max) / y_max

    def line(key: str, cls: str) -> str:
        coords = " ".join(f"{x(p['turn']):.1f},{y(p[key]):.1f}" for p in points)
        return f'<polyline class="{cls}" fill="none" points="{coords}"/>'

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        'role="img" aria-label="replay size per turn">'
    ]
    for i in range(y_max // step + 1):  # y grid
        value = i * step
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y(value):.1f}" '
            f'y2="{y(value):.1f}"/><text class="axis" x="{left - 6}" y="{y(value) + 4:.1f}" '
            f'text-anchor="end">{int(value):,}</text>'
        )
    ticks = sorted({1, turns, *(round(1 + (turns - 1) * i / 6) for i in range(7))})
    for t in ticks:
        out.append(
            f'<text class="axis" x="{x(t):.1f}" y="{top + plot_h + 16}" '
            f'text-anchor="middle">{t}</text>'
        )
    out.append(
        f'<text class="axis" x="{left + plot_w / 2:.1f}" y="{height - 6}" '
        'text-anchor="middle">turn (a genuine user message starts one)</text>'
        f'<text class="axis" x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">chars</text>'
    )
    out.append(
        f'<line class="threshold" x1="{left}" x2="{left + plot_w}" y1="{y(threshold):.1f}" '
        f'y2="{y(threshold):.1f}"/>'
    )
    if budget_chars:
        out.append(
            f'<line class="budget" x1="{left}" x2="{left + plot_w}" y1="{y(budget_chars):.1f}" '
            f'y2="{y(budget_chars):.1f}"/>'
        )
    out.append(line("stored_chars", "unfolded"))
    out.append(line("replay_chars_fold_only", "foldonly"))
    out.append(line("replay_chars", "replay"))
    for p in points:
        if link is not None:
            out.append(f'<a href="{link(p["turn"])}">')
        out.append(
            f'<circle class="pt" cx="{x(p["turn"]):.1f}" cy="{y(p["replay_chars"]):.1f}" r="2.5" '
            f'data-turn="{p["turn"]}" data-replay="{p["replay_chars"]}" '
            f'data-fold-only="{p["replay_chars_fold_only"]}" data-stored="{p["stored_chars"]}" '
            f'data-folds="{p["folds"]}"><title>turn {p["turn"]}: replay {p["replay_chars"]:,}, '
            f"fold only {p['replay_chars_fold_only']:,}, unfolded {p['stored_chars']:,} chars"
            "</title></circle>"
        )
        if link is not None:
            out.append("</a>")
    by_messages = [(p["messages"], p["turn"]) for p in points]
    for s in snapshots:
        stored = int(s.get("messages_stored") or 0)
        turn = next((t for m, t in by_messages if m >= stored), by_messages[-1][1])
        out.append(
            f'<rect class="snap" x="{x(turn) - 4:.1f}" y="{y(int(s.get("chars") or 0)) - 4:.1f}" '
            f'width="8" height="8" data-chars="{esc(s.get("chars"))}" data-turn="{turn}">'
            f"<title>prompt snapshot {esc(s.get('time'))}: {chars(s.get('chars'))} chars "
            f"sent</title></rect>"
        )
    legend = [
        ("replay", "replay: what the model receives"),
        ("foldonly", "fold alone: before placeholders"),
        ("unfolded", "unfolded: everything stored"),
        ("threshold", f"fold threshold: {threshold:,} chars"),
    ]
    if budget_chars:
        legend.append(("budget", f"budget: ≈ {budget_chars:,} chars"))
    legend.append(("snap", "prompt snapshot"))
    for i, (cls, text) in enumerate(legend):
        ly = top + 10 + i * 34
        lx = left + plot_w + 12
        mark = (
            f'<rect class="snap" x="{lx}" y="{ly - 4}" width="8" height="8"/>'
            if cls == "snap"
            else f'<line class="{cls}" x1="{lx}" x2="{lx + 18}" y1="{ly}" y2="{ly}"/>'
        )
        words = text.split(": ", 1) if ": " in text else [text]
        label = "".join(
            f'<tspan x="{lx + 24}" dy="{0 if j == 0 else 13}">{esc(w)}</tspan>'
            for j, w in enumerate(words)
        )
        out.append(f'{mark}<text class="legend" x="{lx + 24}" y="{ly + 4}">{label}</text>')
    if clipped:
        out.append(
            f'<text class="note" x="{left + plot_w - 4}" y="{top + 12}" text-anchor="end">'
            f"unfolded size runs off the top: {unfolded_max:,} chars at turn {turns}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _nice_step(raw: float) -> int:
    """1, 2 or 5 times a power of ten, at least ``raw``."""
    power = 1
    while power * 10 <= raw:
        power *= 10
    return next((m * power for m in (1, 2, 5, 10) if m * power >= raw), 10 * power)


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


# the page frame


# The page's style and script ship as package data (static/), served as they are.
_STATIC = resources.files(__package__) / "static"
CSS = (_STATIC / "view.css").read_text(encoding="utf-8")
JS = (_STATIC / "view.js").read_text(encoding="utf-8")


def page(title: str, body: str, *, nav: str = "") -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · leanreplay view</title>"
        '<link rel="stylesheet" href="/static/view.css"></head><body>'
        '<header class="top"><a class="brand" href="/">leanreplay view</a>'
        '<a href="/">Conversations</a><a href="/snapshots">Prompt snapshots</a>'
        f'<a href="/compactions">Compactions</a>{nav}</header>'
        f'<main>{body}</main><script src="/static/view.js"></script></body></html>'
    )
