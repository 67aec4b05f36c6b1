"""image_view: an image, downscaled with Pillow, safe against decompression bombs.

Memory is bounded before any pixel is decoded: JPEGs decode at a reduced scale (``draft``),
and what would still be decoded (width x height x bytes per pixel as Pillow stores them) must
fit `MAX_DECODE_BYTES`. 16-bit and 32-bit greyscale images are resized in their own mode and
stretched to 8 bits only once small.
"""

from __future__ import annotations

import base64
import io
import os
import warnings
from typing import Any, cast

from PIL import Image, ImageOps, UnidentifiedImageError

from .._errors import WrongFileTypeError
from ._paths import OpenFile

__all__ = ["MAX_DECODE_BYTES", "MAX_IMAGE_PIXELS", "view_image"]

MAX_IMAGE_PIXELS = 64_000_000  # decoding more would take hundreds of MB of memory
MAX_DECODE_BYTES = 256 * 1024 * 1024  # pixel memory of one decoded frame
JPEG_QUALITY = 85
# Bytes per pixel in Pillow's memory (RGB is stored in 4); anything else takes 4.
_PIXEL_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16L": 2, "I;16B": 2, "I;16N": 2}
_DEEP_GREY = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")


def _small(im: Image.Image, max_side: int) -> Image.Image:
    """The decoded frame, at most ``max_side`` on its longer side, in a mode PNG or JPEG keeps."""
    if im.mode not in _DEEP_GREY:
        im.thumbnail((max_side, max_side))
        return im
    scale = min(1.0, max_side / max(im.size))
    small = im.resize((max(1, round(im.width * scale)), max(1, round(im.height * scale))))
    extrema = small.getextrema()  # one band: (min, max)
    low, high = float(cast(float, extrema[0])), float(cast(float, extrema[1]))
    span = high - low or 1.0
    return small.point(lambda v: (v - low) * 255.0 / span).convert("L")


def view_image(f: OpenFile, max_side: int) -> dict[str, Any]:
    """The first frame, at most ``max_side`` pixels on its longer side, as PNG or JPEG."""
    with os.fdopen(os.dup(f.fd), "rb") as stream:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                im = Image.open(stream)
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError) as exc:
            raise WrongFileTypeError(
                f"{f.path!r} is not an image Pillow can read ({exc}); use file_read or pdf_read"
            ) from None
        with im:
            width, height = im.size
            if width * height > MAX_IMAGE_PIXELS:
                raise WrongFileTypeError(
                    f"{f.path!r} is {width}x{height} = {width * height:,} pixels, over the "
                    f"limit of {MAX_IMAGE_PIXELS:,}; it cannot be shown safely"
                )
            fmt = im.format
            # JPEG can decode straight at a reduced scale: far less memory for big photos.
            im.draft("RGB", (max_side, max_side))
            need = im.width * im.height * _PIXEL_BYTES.get(im.mode, 4)
            if need > MAX_DECODE_BYTES:
                raise WrongFileTypeError(
                    f"{f.path!r} is {width}x{height} ({im.mode}): decoding it takes {need:,} "
                    f"bytes, over the limit of {MAX_DECODE_BYTES:,}; it cannot be shown safely"
                )
            try:
                im.seek(0)
                # Downscale first, turn by the EXIF orientation after: a copy of a small image.
                frame = _small(im, max_side)
                frame = ImageOps.exif_transpose(frame) or frame
            except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
                raise WrongFileTypeError(f"{f.path!r} could not be decoded: {exc}") from None
            photo = fmt in ("JPEG", "MPO", "WEBP") and frame.mode in ("RGB", "L", "CMYK", "YCbCr")
            out = io.BytesIO()
            if photo:
                frame.convert("RGB").save(out, "JPEG", quality=JPEG_QUALITY)
                mime = "image/jpeg"
            else:
                if frame.mode not in ("RGB", "RGBA", "L", "LA"):
                    frame = frame.convert("RGBA")
                frame.save(out, "PNG", optimize=False)
                mime = "image/png"
            return {
                "path": f.path,
                "mime": mime,
                "width": frame.width,
                "height": frame.height,
                "original_width": width,
                "original_height": height,
                "format": fmt,
                "data": base64.b64encode(out.getvalue()).decode("ascii"),
            }
