"""A large docx written as a stream, for the benches: the caller writes the body of
word/document.xml, so memory stays flat whatever the size."""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


@contextmanager
def docx_body(
    path: Path, *, declaration: bool = False, compresslevel: int | None = None
) -> Iterator[tuple[IO[bytes], Callable[[], int]]]:
    """Write the docx ``path`` (content types, relationships, and word/document.xml deflated,
    zip64) and yield (the stream of the document's body, the compressed bytes written so
    far); the ``<w:document><w:body>`` around what the caller writes is added here, after
    an XML declaration with ``declaration``."""
    from tests import officegen

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=compresslevel) as z:
        z.writestr(
            "[Content_Types].xml",
            officegen._types(
                {
                    "word/document.xml": "application/vnd.openxmlformats-officedocument."
                    "wordprocessingml.document.main+xml"
                }
            ),
        )
        z.writestr("_rels/.rels", officegen._rels([("officeDocument", "word/document.xml")]))
        with z.open("word/document.xml", "w", force_zip64=True) as out:
            head = f'<w:document xmlns:w="{W}"><w:body>'
            out.write(((officegen._XML if declaration else "") + head).encode())
            yield out, lambda: z.fp.tell() if z.fp is not None else 0
            out.write(b"</w:body></w:document>")
