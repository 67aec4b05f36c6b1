"""PDF text strings (the Info /Title) read as people read them, checked against pypdf's
PDFDocEncoding table as an independent oracle."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pypdf._codecs.pdfdoc import _pdfdoc_encoding as PDFDOC

from leanreplay.cards._pdf import decode_text_string

# Codes PDFDocEncoding leaves undefined (pypdf maps them to NUL; the probe keeps the byte's
# own code point, or U+FFFD for 0x9F) and NUL itself, which the probe strips at the end.
_UNDEFINED = {0x00, 0x16, 0x7F, 0x9F, 0xAD}
_DEFINED = sorted(set(range(256)) - _UNDEFINED)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@given(st.lists(st.sampled_from(_DEFINED), max_size=40).map(bytes))
def test_bytes_without_a_bom_are_utf8_when_they_can_be_else_pdfdocencoding(raw: bytes) -> None:
    if raw.startswith((b"\xfe\xff", b"\xff\xfe", b"\xef\xbb\xbf")):
        return  # a byte order mark: the cases below
    if any(b >= 0x80 for b in raw) and _is_utf8(raw):
        expected = raw.decode("utf-8")
    else:
        expected = "".join(PDFDOC[b] for b in raw)
    assert decode_text_string(raw) == expected


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"\xfe\xff" + "Zoë 📄".encode("utf-16-be"), "Zoë 📄"),
        (b"\xff\xfe" + "Zoë 📄".encode("utf-16-le"), "Zoë 📄"),
        (b"\xef\xbb\xbf" + "Zoë 📄".encode(), "Zoë 📄"),
        (b"\xfe\xff\x00Z\x00o\xd8", "Zo\ufffd"),  # odd length: the last byte is replaced
        (b"\xff\xfeZ\x00o\x00\x00\xdc", "Zo\ufffd"),  # a lone low surrogate
        (b"\xef\xbb\xbfZo\xff", "Zo\ufffd"),
        (b"\x80\x8d\x8e\x84", "\u2022\u201c\u201d\u2014"),  # bullet, quotes, em dash
        (b"\x18\x1f", "\u02d8\u02dc"),  # breve, small tilde: the ends of the low range
        (b"\x17\x20", "\x17 "),  # just outside it: themselves
        (b"\xa0\xa1", "\u20ac\xa1"),  # euro ends the high table; 0xA1 is Latin-1
        (b"caf\xc3\xa9", "café"),  # UTF-8 without a BOM
        (b"caf\xe9", "café"),  # not UTF-8: PDFDocEncoding (Latin-1 here)
        (b"ab\x00\x00", "ab"),  # C-string NULs at the end are dropped
        (b"\x00ab", "\x00ab"),  # only at the end
        (b"TAX\x00", "TAX"),  # and nothing else
        (b"\xfe\xff\x00a\x00\x00", "a"),
    ],
)
def test_text_string_examples(raw: bytes, text: str) -> None:
    assert decode_text_string(raw) == text
