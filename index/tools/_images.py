"""image_view: an image, downscaled with Pillow, safe against decompression bombs."""

from __future__ import annotations

import base64
import io
import os
import warnings
from typing import Any

from PIL import Image, ImageOps, UnidentifiedImageError

from .._errors import WrongFileTypeError
from ._paths import OpenFile

__all__ = ["MAX_IMAGE_PIXELS", "view_image"]

MAX_IMAGE_PIXELS = 64_000_000  # decoding more would take hundreds of MB of memory
JPEG_QUALITY = 85


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
            try:
                im.seek(0)
                frame = ImageOps.exif_transpose(im) or im
                frame.thumbnail((max_side, max_side))
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
