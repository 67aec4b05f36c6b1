"""Audio and video facts from the container header (mutagen); samples are never decoded."""

from __future__ import annotations

import os
from typing import Any

import mutagen

__all__ = ["media_facts"]

_TAGS = {
    "title": ("TIT2", "\xa9nam", "title", "TITLE", "Title"),
    "artist": ("TPE1", "\xa9ART", "artist", "ARTIST", "Author"),
    "album": ("TALB", "\xa9alb", "album", "ALBUM"),
}
MAX_TAG_CHARS = 200


def _tag(tags: Any, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        try:
            value = tags[key]
        except (KeyError, ValueError, TypeError):
            continue
        if isinstance(value, list | tuple):
            value = value[0] if value else None
        text = str(getattr(value, "text", [value])[0] if hasattr(value, "text") else value)
        if text:
            return text[:MAX_TAG_CHARS]
    return None


def media_facts(fd: int) -> tuple[dict[str, Any], list[str]]:
    """``format``, ``duration_s``, ``codec``, ``bitrate``, ``channels``, ``sample_rate`` and
    ``title`` / ``artist`` / ``album`` tags, as far as the header tells."""
    try:
        with os.fdopen(os.dup(fd), "rb") as stream:
            found = mutagen.File(stream)
    except (mutagen.MutagenError, OSError, ValueError, EOFError) as exc:
        return {}, [f"media header unreadable: {exc}"]
    if found is None:
        return {}, ["no audio or video header that mutagen reads"]
    info = found.info
    facts: dict[str, Any] = {"format": type(found).__name__}
    length = getattr(info, "length", None)
    if isinstance(length, int | float) and length > 0:
        facts["duration_s"] = round(float(length), 3)
    codec = getattr(info, "codec", None) or getattr(info, "codec_description", None)
    if codec:
        facts["codec"] = str(codec)[:64]
    for key in ("bitrate", "channels", "sample_rate"):
        value = getattr(info, key, None)
        if isinstance(value, int) and value > 0:
            facts[key] = value
    if found.tags is not None:
        for name, keys in _TAGS.items():
            value = _tag(found.tags, keys)
            if value:
                facts[name] = value
    return facts, []
