"""Writes real PDFs for tests and benchmarks: classic xref tables, xref streams with PNG-Up
rows, object streams, incremental updates, padded pages, and deliberately broken variants.

Kept in tests/ (benchmarks import it too) so that nothing big is ever committed.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from typing import BinaryIO

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
    "revenue",
    "margin",
    "quarter",
    "forecast",
    "audit",
    "ledger",
    "invoice",
    "tariff",
    "pipeline",
    "kernel",
    "lattice",
]


def page_text(n: int, words: int = 200) -> str:
    """Deterministic text of page ``n`` (1-based), with a unique marker word."""
    body = " ".join(WORDS[(n * 7 + i * 13) % len(WORDS)] for i in range(words))
    return f"page{n} marker{n:05d} {body}"


def _escape(text: str) -> bytes:
    return (
        text.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    )


def content_stream(text: str, *, pad: int = 0) -> bytes:
    lines = [text[i : i + 90] for i in range(0, len(text), 90)] or [""]
    ops = [b"BT /F1 10 Tf 12 TL 40 800 Td"]
    ops += [b"(" + _escape(line) + b") '" for line in lines]
    ops.append(b"ET")
    data = b"\n".join(ops) + b"\n"
    if pad:
        data += b"%" + b"x" * pad + b"\n"  # a comment: renders as nothing, weighs as much
    return data


class PdfWriter:
    """Collects numbered objects and serializes them with a chosen cross-reference style."""

    def __init__(self, version: str = "1.7") -> None:
        self.version = version
        self.objects: dict[int, bytes] = {}
        self.streams: set[int] = set()

    def reserve(self) -> int:
        # The last number handed out, while it is still the top one: max() over all objects
        # each time made a 100,000-page document quadratic (minutes to build).
        top = getattr(self, "_top", 0)
        if top not in self.objects or top + 1 in self.objects:
            top = max(self.objects, default=0)
        num = top + 1
        self._top = num
        self.objects[num] = b"null"
        return num

    def set(self, num: int, body: bytes, *, stream: bool = False) -> int:
        self.objects[num] = body
        if stream:
            self.streams.add(num)
        return num

    def add(self, body: bytes, *, stream: bool = False) -> int:
        return self.set(self.reserve(), body, stream=stream)

    def add_stream(self, data: bytes, extra: bytes = b"", *, compress: bool = False) -> int:
        if compress:
            data = zlib.compress(data)
            extra += b" /Filter /FlateDecode"
        body = b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"
        return self.add(body, stream=True)

    def write(
        self,
        out: BinaryIO,
        *,
        root: int,
        info: int | None = None,
        xref: str = "table",
        objstm: bool = False,
        extra_trailer: bytes = b"",
    ) -> None:
        """Serialize. ``xref`` is ``"table"`` or ``"stream"``; ``objstm`` packs plain objects."""
        out.write(b"%PDF-" + self.version.encode() + b"\n%\xe2\xe3\xcf\xd3\n")
        offsets: dict[int, int | tuple[int, int]] = {}
        packed: list[int] = []
        for num in sorted(self.objects):
            if objstm and num not in self.streams:
                packed.append(num)
                continue
            offsets[num] = out.tell()
            out.write(b"%d 0 obj\n" % num + self.objects[num] + b"\nendobj\n")
        size = max(self.objects) + 1
        for chunk_start in range(0, len(packed), 100):
            members = packed[chunk_start : chunk_start + 100]
            stm = size
            size += 1
            header, body = [], b""
            for index, num in enumerate(members):
                header.append(b"%d %d" % (num, len(body)))
                body += self.objects[num] + b"\n"
                offsets[num] = (stm, index)
            head = b" ".join(header) + b"\n"
            data = zlib.compress(head + body)
            offsets[stm] = out.tell()
            out.write(
                b"%d 0 obj\n<< /Type /ObjStm /N %d /First %d /Length %d /Filter /FlateDecode >>\n"
                b"stream\n"
                % (stm, len(members), len(head), len(data))
                + data
                + b"\nendstream\nendobj\n"
            )
        trailer = (
            b"/Root %d 0 R" % root + (b" /Info %d 0 R" % info if info else b"") + extra_trailer
        )
        if xref == "table":
            if objstm:
                raise ValueError("object streams need an xref stream")
            start = out.tell()
            out.write(xref_table(offsets, size))
            out.write(b"trailer\n<< /Size %d %s >>\n" % (size, trailer))
        else:
            start = out.tell()
            xref_num = size
            offsets[xref_num] = start
            size += 1
            out.write(xref_stream_object(xref_num, offsets, size, trailer))
        out.write(b"startxref\n%d\n%%%%EOF\n" % start)


def xref_table(offsets: dict[int, int | tuple[int, int]], size: int) -> bytes:
    rows = [b"xref\n0 %d\n" % size, b"0000000000 65535 f \n"]
    for num in range(1, size):
        where = offsets.get(num)
        if isinstance(where, int):
            rows.append(b"%010d 00000 n \n" % where)
        else:
            rows.append(b"0000000000 00000 f \n")
    return b"".join(rows)


def xref_stream_object(
    num: int, offsets: dict[int, int | tuple[int, int]], size: int, trailer: bytes
) -> bytes:
    rows = []
    for n in range(size):
        where = offsets.get(n)
        if isinstance(where, int):
            rows.append(bytes([1]) + where.to_bytes(4, "big") + (0).to_bytes(2, "big"))
        elif isinstance(where, tuple):
            rows.append(bytes([2]) + where[0].to_bytes(4, "big") + where[1].to_bytes(2, "big"))
        else:
            rows.append(bytes([0]) + (0).to_bytes(4, "big") + (65535).to_bytes(2, "big"))
    encoded = bytearray()
    prev = bytes(7)
    for row in rows:  # PNG "Up" filter, as most writers emit
        encoded.append(2)
        encoded += bytes((a - b) & 0xFF for a, b in zip(row, prev, strict=True))
        prev = row
    data = zlib.compress(bytes(encoded))
    return (
        b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] %s /Filter /FlateDecode "
        b"/DecodeParms << /Predictor 12 /Columns 7 >> /Length %d >>\nstream\n"
        % (num, size, trailer, len(data))
        + data
        + b"\nendstream\nendobj\n"
    )


def build_text_pdf(
    pages: int,
    *,
    xref: str = "table",
    objstm: bool = False,
    pad: int = 0,
    title: str | None = None,
    text: Callable[[int], str] = page_text,
    count: bytes | None = None,
    fanout: int | None = None,
    compress: bool = False,
    version: str = "1.7",
) -> PdfWriter:
    """A PDF whose page ``n`` shows ``text(n)``. ``count`` overrides the root /Count bytes."""
    w = PdfWriter(version)
    catalog = w.reserve()
    tree = w.reserve()
    font = w.add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info = w.add(b"<< /Title (" + _escape(title) + b") /Producer (pdfgen) >>") if title else None
    page_nums = []
    for n in range(1, pages + 1):
        content = w.add_stream(content_stream(text(n), pad=pad), compress=compress)
        page_nums.append(w.add(b"null"))
        w.objects[page_nums[-1]] = (
            b"<< /Type /Page /Parent PARENT /MediaBox [0 0 612 842] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font, content)
        )
    _page_tree(w, tree, page_nums, fanout, count)
    w.set(catalog, b"<< /Type /Catalog /Pages %d 0 R >>" % tree)
    w._root, w._info, w._xref, w._objstm = catalog, info, xref, objstm  # type: ignore[attr-defined]
    return w


def _page_tree(
    w: PdfWriter, tree: int, kids: list[int], fanout: int | None, count: bytes | None
) -> None:
    def fix_parent(num: int, parent: int) -> None:
        w.objects[num] = w.objects[num].replace(b"PARENT", b"%d 0 R" % parent)

    if fanout is None or len(kids) <= fanout:
        for k in kids:
            fix_parent(k, tree)
        refs = b" ".join(b"%d 0 R" % k for k in kids)
        total = count if count is not None else b"%d" % len(kids)
        w.set(tree, b"<< /Type /Pages /Kids [%s] /Count %s >>" % (refs, total))
        return
    groups = [kids[i : i + fanout] for i in range(0, len(kids), fanout)]
    nodes = []
    for group in groups:
        node = w.reserve()
        for k in group:
            fix_parent(k, node)
        refs = b" ".join(b"%d 0 R" % k for k in group)
        w.set(
            node,
            b"<< /Type /Pages /Parent %d 0 R /Kids [%s] /Count %d >>" % (tree, refs, len(group)),
        )
        nodes.append(node)
    refs = b" ".join(b"%d 0 R" % n for n in nodes)
    total = count if count is not None else b"%d" % len(kids)
    w.set(tree, b"<< /Type /Pages /Kids [%s] /Count %s >>" % (refs, total))


def pdf_bytes(pages: int, **kwargs: object) -> bytes:
    w = build_text_pdf(pages, **kwargs)  # type: ignore[arg-type]
    out = io.BytesIO()
    w.write(out, root=w._root, info=w._info, xref=w._xref, objstm=w._objstm)  # type: ignore[attr-defined]
    return out.getvalue()


def write_pdf(path: str, pages: int, **kwargs: object) -> str:
    w = build_text_pdf(pages, **kwargs)  # type: ignore[arg-type]
    with open(path, "wb") as out:
        w.write(out, root=w._root, info=w._info, xref=w._xref, objstm=w._objstm)  # type: ignore[attr-defined]
    return path


def startxref_of(data: bytes) -> int:
    tail = data[data.rindex(b"startxref") :]
    return int(tail.split()[1])


def append_update(
    data: bytes, objects: dict[int, bytes], *, root: int, extra: bytes = b""
) -> bytes:
    """An incremental update: new or replaced objects, a table of just those, /Prev back."""
    prev = startxref_of(data)
    out = bytearray(data)
    offsets = {}
    for num in sorted(objects):
        offsets[num] = len(out)
        out += b"%d 0 obj\n" % num + objects[num] + b"\nendobj\n"
    size = max(max(objects) + 1, _size_of(data))
    start = len(out)
    out += b"xref\n"
    for num in sorted(offsets):
        out += b"%d 1\n%010d 00000 n \n" % (num, offsets[num])
    out += b"trailer\n<< /Size %d /Root %d 0 R /Prev %d %s >>\n" % (size, root, prev, extra)
    out += b"startxref\n%d\n%%%%EOF\n" % start
    return bytes(out)


def _size_of(data: bytes) -> int:
    at = data.rindex(b"/Size")
    return int(data[at + 5 :].split()[0].rstrip(b">/"))


def incremental_add_pages(base_pages: int, added: int) -> bytes:
    """A classic PDF of ``base_pages`` pages, then an update that appends ``added`` pages."""
    data = pdf_bytes(base_pages)
    size = _size_of(data)
    objects: dict[int, bytes] = {}
    new_pages = []
    for i in range(added):
        n = base_pages + i + 1
        content = size + 2 * i
        page = content + 1
        stream = content_stream(page_text(n))
        objects[content] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
        objects[page] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % content
        )
        new_pages.append(page)
    old_kids = _kids_of(data)
    kids = b" ".join(b"%d 0 R" % k for k in [*old_kids, *new_pages])
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, base_pages + added)
    return append_update(data, objects, root=1)


def _kids_of(data: bytes) -> list[int]:
    at = data.index(b"/Kids [")
    body = data[at + 7 : data.index(b"]", at)]
    parts = body.split()
    return [int(parts[i]) for i in range(0, len(parts), 3)]


def lost_page_tree_pdf(pages: int = 3) -> bytes:
    """The page tree object is gone (the catalog still points at it) and ``startxref`` points
    nowhere, while the pages themselves are intact: the shape of py-pdf/sample-files'
    017-unreadable-meta-data, which PDFium and pypdf refuse and poppler reads."""
    w = build_text_pdf(pages)
    del w.objects[w._root + 1]  # type: ignore[attr-defined] # the tree: reserved after the root
    out = io.BytesIO()
    w.write(out, root=w._root)  # type: ignore[attr-defined]
    data = out.getvalue()
    return data[: data.rindex(b"startxref")] + b"startxref\n17\n%%EOF\n"


def one_page_pdf(content: bytes, info: dict[str, bytes] | None = None) -> bytes:
    """One page drawn by ``content`` (font /F1 is WinAnsi Helvetica); ``info`` values are the
    raw bytes of Info dictionary strings, written as hex strings."""
    w = PdfWriter()
    catalog = w.reserve()
    tree = w.reserve()
    font = w.add(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    stream = w.add_stream(content)
    page = w.add(
        b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Contents %d 0 R "
        b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (tree, stream, font)
    )
    w.set(tree, b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % page)
    w.set(catalog, b"<< /Type /Catalog /Pages %d 0 R >>" % tree)
    entries = b" ".join(
        b"/%s <%s>" % (k.encode(), v.hex().encode()) for k, v in (info or {}).items()
    )
    info_num = w.add(b"<< %s >>" % entries) if info else None
    out = io.BytesIO()
    w.write(out, root=catalog, info=info_num)
    return out.getvalue()


# A hyphen at the end of a line (PDFium reports it as U+FFFE) and soft hyphens (0xAD).
HYPHENATED_CONTENT = (
    b"BT /F1 10 Tf 12 TL 40 800 Td (The quick exam-) ' (ple of soft\xadhyphen and end\xad) ' "
    b"(ing here.) ' ET\n"
)
HYPHENATED_TEXT = "The quick exam-\nple of soft-hyphen and end-\ning here."

# Info strings as producers write them, and what people read.
METADATA_INFO = {
    "Title": "Rapport d’activité — été 2024".encode(),  # UTF-8 without a BOM
    "Author": b"\xfe\xff" + "Zoë Ångström".encode("utf-16-be") + b"\x00\x00",  # and a NUL
    "Subject": b"\x8dQuarterly\x8e review \x84 draft",  # PDFDocEncoding: quotes, em dash
    "Producer": b"pdfgen\x00",
    "CreationDate": b"D:20100503143917-05'00'",
    "ModDate": b"D:20240229",
}
METADATA_READ = {
    "title": "Rapport d’activité — été 2024",
    "author": "Zoë Ångström",
    "subject": "“Quarterly” review — draft",
    "producer": "pdfgen",
    "created": "2010-05-03T14:39:17-05:00",
    "modified": "2024-02-29",
}


def text_bomb(pages: int = 5000, chars: int = 198_000) -> bytes:
    """A PDF whose pages all share one compressed content stream of ``chars`` characters:
    small on disk, ``pages * chars`` characters once extracted (a "text bomb")."""
    w = PdfWriter()
    catalog = w.reserve()
    tree = w.reserve()
    font = w.add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    text = " ".join(WORDS[(i * 13) % len(WORDS)] for i in range(chars // 4))[:chars]
    content = w.add_stream(content_stream(text), compress=True)
    kids = [
        w.add(
            b"<< /Type /Page /Parent PARENT /MediaBox [0 0 612 842] "
            b"/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>" % (font, content)
        )
        for _ in range(pages)
    ]
    _page_tree(w, tree, kids, 100, None)
    w.set(catalog, b"<< /Type /Catalog /Pages %d 0 R >>" % tree)
    out = io.BytesIO()
    w.write(out, root=catalog, xref="stream", objstm=True)
    return out.getvalue()


# An xref-stream PDF assembled by hand, for hostile-input tests: plain objects, object
# streams whose every field can be wrong on purpose, an xref stream with chosen widths.

PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] >>"


def png_encode(rows: list[bytes], kinds: list[int]) -> bytes:
    """PNG filtering (RFC 2083, 6) of ``rows``, filter type ``kinds[i]`` for row i (0 None,
    1 Sub, 2 Up, 3 Average, 4 Paeth), one byte per pixel: what a PDF predictor 10-15 holds."""
    out, prev = bytearray(), bytes(len(rows[0]) if rows else 0)
    for row, kind in zip(rows, kinds, strict=True):
        out.append(kind)
        if kind == 0:
            out += row
            prev = row
            continue
        for i, x in enumerate(row):
            a = row[i - 1] if i else 0
            b = prev[i]
            c = prev[i - 1] if i else 0
            if kind == 1:
                pred = a
            elif kind == 2:
                pred = b
            elif kind == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            out.append((x - pred) & 0xFF)
        prev = row
    return bytes(out)


def three_pages(**replace: bytes) -> dict[int, bytes]:
    """Catalog 1, page tree 2, pages 3-5; ``o2=b"..."`` replaces object 2, and so on."""
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 3 >>",
        3: PAGE,
        4: PAGE,
        5: PAGE,
    }
    return objects | {int(k[1:]): v for k, v in replace.items()}


class ObjStm:
    """An object stream. ``length`` is the /Length entry as written (None: the real one);
    ``columns`` adds a PNG Up predictor; ``hints`` overrides the index the xref gives a
    member; ``n``, ``first`` and ``header`` override what the stream says of itself;
    ``data`` replaces the stream's bytes outright."""

    def __init__(
        self,
        num: int,
        members: dict[int, bytes],
        *,
        length: bytes | None = None,
        columns: int | None = None,
        compress: bool = True,
        hints: dict[int, int] | None = None,
        n: bytes | None = None,
        first: bytes | None = None,
        header: bytes | None = None,
        data: bytes | None = None,
    ) -> None:
        self.num = num
        self.members = members
        self.length = length
        self.columns = columns
        self.compress = compress
        self.hints = hints or {}
        self.n, self.first, self.header, self.raw = n, first, header, data

    def _plain(self) -> tuple[bytes, int]:
        header, body = [], b""
        for num, value in self.members.items():
            header.append(b"%d %d" % (num, len(body)))
            body += value + b"\n"
        head = self.header if self.header is not None else b" ".join(header) + b"\n"
        return head + body, len(head)

    def data(self) -> bytes:
        if self.raw is not None:
            return self.raw
        raw, _ = self._plain()
        if self.columns is not None:
            raw += b" " * (-len(raw) % self.columns)
            encoded, prev = bytearray(), bytes(self.columns)
            for i in range(0, len(raw), self.columns):
                row = raw[i : i + self.columns]
                encoded += b"\x02" + bytes((a - b) & 0xFF for a, b in zip(row, prev, strict=True))
                prev = row
            raw = bytes(encoded)
        return zlib.compress(raw) if self.compress else raw

    def body(self) -> bytes:
        data = self.data()
        first = self.first if self.first is not None else b"%d" % self._plain()[1]
        n = self.n if self.n is not None else b"%d" % len(self.members)
        length = self.length if self.length is not None else b"%d" % len(data)
        extra = b"/Filter /FlateDecode " if self.compress else b""
        if self.columns is not None:
            extra += b"/DecodeParms << /Predictor 12 /Columns %d >> " % self.columns
        return (
            b"<< /Type /ObjStm /N %s /First %s /Length %s %s>>\nstream\n"
            % (n, first, length, extra)
            + data
            + b"\nendstream"
        )


def assemble(
    plain: dict[int, bytes],
    streams: tuple[ObjStm, ...] = (),
    *,
    widths: tuple[int, int, int] = (1, 4, 2),
    root: int = 1,
    trailer: bytes = b"",
) -> bytes:
    """A PDF of ``plain`` objects and object ``streams`` behind one uncompressed xref stream
    with field ``widths``; ``trailer`` adds entries to its dictionary."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    where: dict[int, int | tuple[int, int]] = {}
    for num, body in sorted(plain.items()):
        where[num] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (num, body))
    for stm in streams:
        where[stm.num] = out.tell()
        out.write(b"%d 0 obj\n%s\nendobj\n" % (stm.num, stm.body()))
        for index, member in enumerate(stm.members):
            where[member] = (stm.num, stm.hints.get(member, index))
    xref_num = max(where) + 1
    where[xref_num] = out.tell()
    rows = bytearray()
    for num in range(xref_num + 1):
        kind, a, b = (0, 0, 65535)
        at = where.get(num)
        if isinstance(at, int):
            kind, a, b = 1, at, 0
        elif isinstance(at, tuple):
            kind, a, b = 2, at[0], at[1]
        for value, width in zip((kind, a, b), widths, strict=True):
            rows += value.to_bytes(width, "big")
    start = where[xref_num]
    out.write(
        b"%d 0 obj\n<< /Type /XRef /Size %d /W [%d %d %d] /Root %d 0 R %s/Length %d >>\n"
        b"stream\n"
        % (xref_num, xref_num + 1, *widths, root, trailer, len(rows))
        + bytes(rows)
        + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % start
    )
    return out.getvalue()
