"""Inline attachments: base64 images, documents and data URLs in stored user messages are
saved once under the home by content hash, and replay shows their card instead.

The stored message is never changed, so `Workspace.messages` still returns it byte-exact;
only the replay swaps each inline block for a one-line text block with the card, which
names the tool (image_view, pdf_read, file_read ...) that reads the saved file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from leanreplay.cards import card_for

from .._errors import home_error
from .._gcpause import collect_young

__all__ = [
    "MAX_ATTACHMENT_BYTES",
    "AttachmentSaver",
    "SavedAttachment",
    "inline_blocks",
    "save_inline",
    "with_cards",
]

MAX_ATTACHMENT_BYTES = 256 * 1024 * 1024

# (block index, saved path, rendered card) of one inline attachment of a message
SavedAttachment = tuple[int, str, str]
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(?:;[\w-]+=[^;,]*)*;base64,", re.IGNORECASE)
_SAFE_EXTENSION = re.compile(r"\.[a-z0-9]{1,10}")
_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "text/markdown": ".md",
    "application/json": ".json",
}


def _from_data_url(url: str) -> tuple[str | None, str] | None:
    match = _DATA_URL.match(url)
    if not match:
        return None
    return match.group(1), url[match.end() :]


def inline_blocks(message: Mapping[str, Any]) -> Iterator[tuple[int, str | None, str, str | None]]:
    """(block index, media type, base64 data, file name) of each inline attachment of a
    user message, in Anthropic or OpenAI shape."""
    if message.get("role") != "user" or not isinstance(message.get("content"), list):
        return
    for i, block in enumerate(message["content"]):
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind in ("image", "document"):
            source = block.get("source")
            if (
                isinstance(source, Mapping)
                and source.get("type") == "base64"
                and isinstance(source.get("data"), str)
            ):
                name = block.get("title") if isinstance(block.get("title"), str) else None
                media = (
                    source.get("media_type") if isinstance(source.get("media_type"), str) else None
                )
                yield i, media, source["data"], name
        elif kind == "image_url":
            image = block.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else None
            parsed = _from_data_url(url) if isinstance(url, str) else None
            if parsed:
                yield i, parsed[0], parsed[1], None
        elif kind == "file":
            file = block.get("file")
            data = file.get("file_data") if isinstance(file, Mapping) else None
            if isinstance(data, str):
                parsed = _from_data_url(data)
                filename = file.get("filename") if isinstance(file, Mapping) else None
                name = filename if isinstance(filename, str) else None
                if parsed:
                    yield i, parsed[0], parsed[1], name
                else:
                    yield i, None, data, name


def save_inline(
    directory: str, media: str | None, data: str, name: str | None
) -> tuple[str, str] | None:
    """Write the decoded bytes under ``directory`` by SHA-256 (once); returns (path, card)."""
    if len(data) > MAX_ATTACHMENT_BYTES * 4 // 3 + 4:
        return None
    try:
        raw = base64.b64decode(
            "".join(data.split()), validate=True
        )  # MIME-style line breaks are fine
    except (binascii.Error, ValueError):
        return None  # not base64: the replay keeps the block as it was sent
    digest = hashlib.sha256(raw).hexdigest()
    extension = (
        _EXTENSIONS.get((media or "").lower()) or mimetypes.guess_extension(media or "") or ".bin"
    )
    named = os.path.splitext(name)[1].lower() if name else ""
    if _SAFE_EXTENSION.fullmatch(named):  # a title is hostile: NUL bytes, separators, ...
        extension = named
    folder = os.path.join(directory, digest[:2])
    path = os.path.join(folder, digest + extension)
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(raw)
        os.replace(tmp, path)
    shown = name or f"attachment-{digest[:12]}{extension}"
    return path, card_for(path, name=shown).render()


def with_cards(
    messages: list[dict[str, Any]], cards: Mapping[tuple[str, int], str]
) -> list[dict[str, Any]]:
    """Messages with each saved inline block replaced by a text block holding its card."""
    if not cards:
        return messages
    out = list(messages)
    for i, message in enumerate(messages):
        mid = message.get("id")
        if not isinstance(mid, str):
            continue
        blocks = [(b, cards[(mid, b)]) for b, *_ in inline_blocks(message) if (mid, b) in cards]
        if not blocks:
            continue
        copy = dict(message)
        content = list(copy["content"])
        for b, card in blocks:
            content[b] = {"type": "text", "text": card}
        copy["content"] = content
        out[i] = copy
    return out


class AttachmentSaver:
    """Saves the inline attachments of messages under the home, once per message object."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._done: dict[int, tuple[Mapping[str, Any], list[SavedAttachment]]] = {}

    def __call__(self, message: Mapping[str, Any]) -> list[SavedAttachment]:
        known = self._done.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        out: list[SavedAttachment] = []
        for block, media, data, name in inline_blocks(message):
            try:
                saved = save_inline(self.directory, media, data, name)
            except OSError as exc:
                raise home_error("an inline attachment into the home", exc) from None
            if saved is not None:
                out.append((block, *saved))
            # Its card may leave parser cycles behind (defusedxml's iterparse does, ~190 KB an
            # xlsx), which an import's paused collector would keep until the import ends.
            collect_young()
        self._done[id(message)] = (message, out)
        return out
