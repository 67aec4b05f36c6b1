"""Image facts from the header alone; pixels are never decoded."""

from __future__ import annotations

import warnings
from typing import Any, BinaryIO

from PIL import Image, UnidentifiedImageError

__all__ = ["MAX_FRAME_SCAN_BYTES", "image_facts"]

# Counting GIF frames walks every frame's blocks; past this size the count is left out.
MAX_FRAME_SCAN_BYTES = 32 * 1024 * 1024


def image_facts(stream: BinaryIO, size: int) -> tuple[dict[str, Any], list[str]]:
    """``width``, ``height``, ``format``, ``frames`` as far as the header tells."""
    notes: list[str] = []
    try:
        with warnings.catch_warnings():
            # Dimensions are read, never pixels, so a huge canvas is no danger here.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(stream) as im:
                facts: dict[str, Any] = {
                    "width": im.width,
                    "height": im.height,
                    "format": im.format,
                }
                if size <= MAX_FRAME_SCAN_BYTES or im.format != "GIF":
                    facts["frames"] = int(getattr(im, "n_frames", 1))
                else:
                    notes.append(
                        f"frame count skipped: GIF of {size} bytes is over {MAX_FRAME_SCAN_BYTES}"
                    )
                return facts, notes
    except Image.DecompressionBombError as exc:
        return {}, [f"image header declares too many pixels: {exc}"]
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError) as exc:
        return {}, [f"image header unreadable: {exc}"]
