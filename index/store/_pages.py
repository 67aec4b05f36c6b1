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

from ._attachments import _from_data_url, save_inline

__all__ = ["MAX_PAGE_IMAGES", "MAX_READ_CHARS", "Readable", "page", "readable"]

MAX_READ_CHARS = 40_000  # one answer, as the model receives it (JSON-escaped)
MAX_PAGE_IMAGES = 8  # image parts per answer; a page stops before the next image's marker


@dataclass
class Readable:
    """The text of a unit, its image parts and where each image's marker starts."""

    text: str
    format: str  # "text" (the original string) or "json" (structured content as JSON)
    images: list[dict[str, Any]] = field(default_factory=list)
    marker_offsets: list[int] = field(default_factory=list)


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
