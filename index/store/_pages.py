"""Bounded, pageable reads of stored originals for `conversation_read`.

A stored unit (a message, one tool result, one tool input) becomes one text: a string
content verbatim, anything structured as its JSON. Inline base64 data never enters that text:
each image becomes an image part (returned beside the text, ready to send to a model) and each
other inline file (a PDF, a data URL) its card, both behind a short marker. Pages are slices
of the text, so concatenating them gives the text back exactly; the byte-exact original stays
in the store (`Workspace.messages`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from leanreplay.placeholders import call_inputs, read_call, result_slots

from .._errors import ConversationNotFoundError, InvalidArgumentError
from ._attachments import _from_data_url, save_inline
from ._protocol import StoreProtocol
from ._store import check_id

__all__ = [
    "MAX_PAGE_IMAGES",
    "Readable",
    "next_read_call",
    "original",
    "page",
    "read_original",
    "readable",
]

MAX_PAGE_IMAGES = 8  # image parts per answer; a page stops before the next image's marker


@dataclass
class Readable:
    """The text of a unit, its image parts and where each image's marker starts."""

    text: str
    format: str  # "text" (the original string) or "json" (structured content as JSON)
    images: list[dict[str, Any]] = field(default_factory=list)
    marker_offsets: list[int] = field(default_factory=list)


def original(
    message: Mapping[str, Any], message_id: str, tool_call_id: str | None, part: str | None
) -> tuple[dict[str, Any], Any]:
    """The unit of a stored message that ``conversation_read`` returns: (the fields that name
    it in the answer, its value). A tool call's input with ``part="input"``; else the result
    of ``tool_call_id`` (or of the one result the message holds); else a string content
    verbatim; else the whole message without its id."""
    head: dict[str, Any] = {}
    if part is not None:
        if part != "input":
            raise InvalidArgumentError(f'part must be "input" or absent, got {part!r}')
        if tool_call_id is None:
            raise InvalidArgumentError('part="input" needs the tool_call_id the placeholder names')
        check_id("tool_call_id", tool_call_id)
        inputs = dict(call_inputs(message))
        if tool_call_id not in inputs:
            raise ConversationNotFoundError(
                f"message {message_id!r} makes no tool call {tool_call_id!r}"
                + (f"; it makes {', '.join(map(repr, inputs))}" if inputs else "")
            )
        return {"tool_call_id": tool_call_id, "part": part}, inputs[tool_call_id]
    slots = result_slots(message)
    if tool_call_id is not None:
        check_id("tool_call_id", tool_call_id)
        chosen = [s for s in slots if s.tool_call_id == tool_call_id]
        if not chosen:
            known = [s.tool_call_id for s in slots]
            raise ConversationNotFoundError(
                f"message {message_id!r} holds no result for tool call {tool_call_id!r}"
                + (f"; it holds {', '.join(map(repr, known))}" if known else "")
            )
        slots = chosen
    if tool_call_id is not None or len(slots) == 1:
        head = {"tool_call_id": slots[0].tool_call_id, "is_error": slots[0].is_error}
        return head, slots[0].content
    if isinstance(message.get("content"), str) and not message.get("tool_calls"):
        return head, message["content"]
    return head, {k: v for k, v in message.items() if k != "id"}


def next_read_call(
    conversation_id: str, message_id: str, head: Mapping[str, Any], offset: int
) -> str:
    """The ``conversation_read(...)`` call that returns the page at ``offset``."""
    call = read_call(conversation_id, message_id, head.get("tool_call_id"), head.get("part"))
    return f"{call[:-1]}, offset={offset})"


def _image_marker(n: int) -> str:
    return f"<image {n}: returned as image content>"


def readable(value: Any, attachments_dir: str) -> Readable:
    """The unit as one text, with inline data replaced by markers (images kept as parts)."""
    if isinstance(value, str):
        return Readable(value, "text")
    images: list[dict[str, Any]] = []
    markers: list[str] = []

    def image(media: str, data: str) -> str:
        images.append(
            {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
        )
        marker = _image_marker(len(images))
        markers.append(marker)
        return marker

    def other(media: str | None, data: str, name: str | None) -> str:
        saved = save_inline(attachments_dir, media, data, name)
        if saved is None:
            return f"<inline data of {len(data):,} chars, not base64; in the stored original>"
        return f"<inline file saved as an attachment: {saved[1]}>"

    def inline(media: str | None, data: str, name: str | None) -> str:
        if media and media.lower().startswith("image/"):
            return image(media, data)
        return other(media, data, name)

    def data_url(url: str, name: str | None) -> str:
        # Only the base64 part is replaced: the prefix (media type, parameters) stays.
        parsed = _from_data_url(url)
        if parsed is None:
            return url
        media, data = parsed
        return url[: len(url) - len(data)] + inline(media, data, name)

    def strip(node: Any) -> Any:
        if isinstance(node, list):
            return [strip(x) for x in node]
        if not isinstance(node, Mapping):
            return node
        out = {k: strip(v) for k, v in node.items()}
        kind = node.get("type")
        source = node.get("source")
        if (
            kind in ("image", "document")
            and isinstance(source, Mapping)
            and source.get("type") == "base64"
            and isinstance(source.get("data"), str)
        ):
            media = source.get("media_type")
            media = media if isinstance(media, str) else None
            name = node.get("title") if isinstance(node.get("title"), str) else None
            out["source"] = {**source, "data": inline(media, source["data"], name)}
        elif kind == "image_url" and isinstance(node.get("image_url"), Mapping):
            url = node["image_url"].get("url")
            if isinstance(url, str):
                out["image_url"] = {**node["image_url"], "url": data_url(url, None)}
        elif kind == "input_image" and isinstance(node.get("image_url"), str):
            out["image_url"] = data_url(node["image_url"], None)
        elif kind in ("file", "input_file"):
            holder = node.get("file") if kind == "file" else node
            data = holder.get("file_data") if isinstance(holder, Mapping) else None
            if isinstance(holder, Mapping) and isinstance(data, str):
                filename = holder.get("filename")
                name = filename if isinstance(filename, str) else None
                replaced = (
                    data_url(data, name) if _from_data_url(data) else inline(None, data, name)
                )
                if kind == "file":
                    out["file"] = {**holder, "file_data": replaced}
                else:
                    out["file_data"] = replaced
        return out

    text = json.dumps(strip(value), ensure_ascii=False)
    offsets = []
    start = 0
    for marker in markers:  # markers appear in the order they were made
        start = text.index(marker, start)
        offsets.append(start)
        start += len(marker)
    return Readable(text, "json", images, offsets)


def _escaped_len(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False)) - 2


def page(
    unit: Readable,
    offset: int,
    max_chars: int,
    envelope: Callable[[str, int | None], dict[str, Any]],
) -> dict[str, Any]:
    """The answer for ``unit[offset:]``: ``envelope(content, next_offset)`` with the content cut
    so that the whole answer, as JSON, stays within ``max_chars`` (images aside)."""
    total = len(unit.text)
    overhead = len(json.dumps({**envelope("", total), "images": []}, ensure_ascii=False))
    budget = max(max_chars - overhead, 1)
    end = min(total, offset + budget)
    while end > offset + 1 and _escaped_len(unit.text[offset:end]) > budget:
        excess = _escaped_len(unit.text[offset:end]) - budget
        end = max(offset + 1, end - excess)
    shown = [i for i, at in enumerate(unit.marker_offsets) if offset <= at < end]
    if len(shown) > MAX_PAGE_IMAGES:
        end = unit.marker_offsets[shown[MAX_PAGE_IMAGES]]
        shown = shown[:MAX_PAGE_IMAGES]
    answer = envelope(unit.text[offset:end], end if end < total else None)
    answer["images"] = [unit.images[i] for i in shown]
    return answer


def read_original(
    store: StoreProtocol,
    cid: str,
    mid: str,
    tool_call_id: str | None,
    part: str | None,
    offset: int,
    max_chars: int,
    attachments_dir: str,
) -> dict[str, Any]:
    """`conversation_read`: the page at ``offset`` of the original a placeholder names (the
    message, one tool result, or with ``part="input"`` one tool input), with the `next` call.
    """
    message = store.message(cid, mid).message()
    fields, value = original(message, mid, tool_call_id, part)
    head = {"conversation_id": cid, "message_id": mid, "role": message.get("role"), **fields}
    unit = readable(value, attachments_dir)
    if offset > len(unit.text):
        raise InvalidArgumentError(
            f"offset {offset} is past the end: the original text has {len(unit.text):,} "
            "chars; start again at offset 0"
        )

    def envelope(content: str, next_offset: int | None) -> dict[str, Any]:
        nxt = None if next_offset is None else next_read_call(cid, mid, head, next_offset)
        return {
            **head,
            "format": unit.format,
            "offset": offset,
            "total_chars": len(unit.text),
            "content": content,
            "next": nxt,
        }

    return page(unit, offset, max_chars, envelope)
