"""The simple-dictionary fast path (`simple_dict`): on every dictionary of the committed
samples and of generated files (object streams inflated too), and on random token soup, its
answer is the general parser's, value for value and type for type, and it declines what its
syntax does not cover. Its C version (cards/_simpledict.c) and its Python version answer
alike on every one of those inputs."""

from __future__ import annotations

import contextlib
import importlib
import re
import sys
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leanreplay.cards import _pdfobj, pdf_facts
from leanreplay.cards._pdfobj import (
    Broken,
    Incomplete,
    Name,
    Parser,
    PlainArray,
    Ref,
    simple_dict,
)
from tests import pdfgen
from tests.cards.conftest import require_built
from tests.conftest import SAMPLES, load_manifest


class GeneralParser(Parser):
    simple = False


def typed(value: object) -> object:
    """The value with every type spelled out: a Name value is not a str, True is not 1, 1.0
    is not 1. Keys are names always (`check` asserts it), compared by their text."""
    if isinstance(value, dict):
        return ("dict", [(str(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, PlainArray):
        return ("plain", value.raw)
    return (type(value).__name__, value)


def general(buf: bytes, pos: int, *, at_eof: bool = True) -> tuple[object, int]:
    parser = GeneralParser(buf, pos, at_eof=at_eof)
    return typed(parser.parse()), parser.pos


def alike(buf: bytes, pos: int) -> None:
    """The C and the Python fast path give the same answer (where C was built)."""
    if _pdfobj._simpledict is None:
        return
    c = _pdfobj._simpledict.simple_dict(buf, pos, Name, Ref, PlainArray)
    python = _pdfobj._simple_dict(buf, pos)
    assert (c is None) == (python is None), (buf[pos : pos + 200], c, python)
    if c is not None and python is not None:
        assert (typed(c[0]), c[1]) == (typed(python[0]), python[1]), buf[pos : pos + 200]
        assert all(type(k) is Name for k in c[0])


def check(buf: bytes, pos: int) -> bool:
    """True when the fast path read the dictionary at ``pos`` (and agreed with the general,
    and its C and Python versions with each other)."""
    alike(buf, pos)
    found = simple_dict(buf, pos)
    if found is None:
        return False
    value, end = found
    assert all(type(k) is Name for k in value)
    assert general(buf, pos) == (typed(value), end), buf[pos : pos + 200]
    # Near the window's end the general parser may ask for more bytes instead.
    with contextlib.suppress(Incomplete):
        assert general(buf, pos, at_eof=False) == (typed(value), end)
    return True


def buffers(data: bytes) -> list[bytes]:
    """The file and each of its streams that inflates (object streams hold dictionaries)."""
    out = [data]
    for m in re.finditer(rb"stream\r?\n", data):
        try:
            out.append(zlib.decompressobj().decompress(data[m.end() : m.end() + 1_000_000]))
        except zlib.error:
            continue
    return out


def generated() -> list[bytes]:
    return [
        pdfgen.pdf_bytes(30),
        pdfgen.pdf_bytes(30, xref="stream", objstm=True, title="A (title)"),
        pdfgen.pdf_bytes(300, xref="stream", objstm=True, fanout=16),
        pdfgen.incremental_add_pages(5, 3),
        pdfgen.lost_page_tree_pdf(),
    ]


def test_every_dictionary_of_the_samples_and_generated_files_reads_the_same() -> None:
    files = [(SAMPLES / n).read_bytes() for n in sorted(load_manifest()) if n.endswith(".pdf")]
    read = declined = 0
    for data in files + generated():
        for buf in buffers(data):
            for m in re.finditer(rb"<<", buf):
                if check(buf, m.start()):
                    read += 1
                else:
                    declined += 1
    # The fast path is taken for most dictionaries of real files.
    assert read > 1000
    assert read > declined


@pytest.mark.parametrize(
    "data",
    [
        b"<< /A 1 % a comment\n>>",
        b"<< /A#20B 1 >>",
        b"<< /A /B#20C >>",
        b"<< /A (esc\\)aped) >>",
        b"<< /A (nested (parens)) >>",
        b"<< /A [[1 2] 3] >>",
        b"<< /A [<< /B 1 >>] >>",
        b"<< /A << /B << /C << /D 1 >> >> >> >>",
        b"<< /A <ab cd> >>",
        b"<< /A 5R >>",
        b"<< /A nullx >>",
        b"<< /A 1.2.3 >>",
        b"<< /A 1 0 Rx >>",
        b"<< /A [1.2.3] >>",
        b"<< /A [(a]b)] >>",
        b"<< /A [1 X] >>",  # a keyword the simple syntax does not know, last in the array
        b"<< /A [%\n" + b" 1 0 R" * 60 + b"] >>",  # a long array, plain but for its comment
        b"<< /A {1} >>",
        b"<< /A 1 ",
        b"<< /A 1 >",
        b"<< 1 2 >>",
    ],
)
def test_what_the_simple_syntax_does_not_cover_is_declined(data: bytes) -> None:
    alike(data, 0)
    assert simple_dict(data, 0) is None
    # ...and the parser still gives the general parser's answer, or the same error.
    try:
        expected: object = general(data, 0)
    except (Broken, Incomplete) as exc:
        expected = type(exc)
    try:
        parser = Parser(data, 0, at_eof=True)
        got: object = (typed(parser.parse()), parser.pos)
    except (Broken, Incomplete) as exc:
        got = type(exc)
    assert got == expected


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"<<>>", {}),
        (b"<</Type/Page/Count 3>>", {"Type": Name("Page"), "Count": 3}),
        (b"<< /A 1 0 R /B 2 /C -.5 /D 3. >>", {"A": Ref(1, 0), "B": 2, "C": -0.5, "D": 3.0}),
        (b"<< /A 1 2 3 R >>", None),  # declined: "2 3 R" is no key (the general parser: Broken)
        (b"<< /A [1 2 3 R] >>", {"A": [1, Ref(2, 3)]}),
        (b"<< /A true /B false /C null >>", {"A": True, "B": False, "C": None}),
        (
            b"<< /A <abc> /B <> /C (x y) /D () >>",
            {"A": b"\xab\xc0", "B": b"", "C": b"x y", "D": b""},
        ),
        (b"<< /A 1 /A 2 >>", {"A": 2}),  # a repeated key: the last one, as in the general parser
        (b"<< /A << /B << /C 1 >> >> >>", {"A": {"B": {"C": 1}}}),
        (b"<< / 1 >>", {"": 1}),
    ],
)
def test_simple_dictionaries_read_as_the_general_parser_reads_them(
    data: bytes, value: object
) -> None:
    alike(data, 0)
    found = simple_dict(data, 0)
    if value is None:
        assert found is None
        return
    assert found is not None
    assert typed(found[0]) == typed(value)
    assert general(data, 0) == (typed(found[0]), found[1])


def test_a_long_plain_array_stays_lazy() -> None:
    kids = b"[" + b" ".join(b"%d 0 R" % i for i in range(200)) + b"]"
    data = b"<< /Kids " + kids + b" /Count 200 >>"
    found = simple_dict(data, 0)
    assert found is not None
    assert found[0]["Kids"] == PlainArray(kids)
    assert general(data, 0) == (typed(found[0]), found[1])


@pytest.mark.parametrize("inside", [255, 256, 257], ids=str)
def test_an_array_becomes_lazy_past_256_bytes_as_in_the_general_parser(inside: int) -> None:
    items = b" ".join(b"%d 0 R" % i for i in range(100))[: inside - 1].rstrip(b" 0123456789")
    kids = b"[" + items.ljust(inside, b" ") + b"]"  # ``inside`` bytes between the brackets
    data = b"<< /Kids " + kids + b">>"
    assert check(data, 0)
    found = simple_dict(data, 0)
    assert found is not None
    assert isinstance(found[0]["Kids"], PlainArray) is (inside + 1 > 256)


TOKENS = [
    b"<<", b">>", b"<", b">", b"[", b"]", b"(", b")", b"{", b"}", b"/", b"/A", b"/Type",
    b"/B#20", b"#", b"%c\n", b" ", b"  ", b"\n", b"\r\n", b"\x00", b"\t", b"0", b"1", b"12",
    b"-", b"+", b".", b"-.5", b"3.", b"1.2.3", b"R", b"Rx", b"true", b"false", b"null",
    b"nullx", b"<ab>", b"<a b>", b"<abc>", b"(x)", b"(a\\)b)", b"\\", b"stream", b"\xff",
]  # fmt: skip


@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.binary(max_size=20))
def test_token_soup_reads_the_same_or_is_declined(tokens: list[bytes], tail: bytes) -> None:
    buf = b"".join(tokens) + tail
    for m in re.finditer(rb"<<", buf):
        check(buf, m.start())


@given(st.binary(max_size=200))
def test_random_bytes_read_the_same_or_are_declined(data: bytes) -> None:
    buf = b"<<" + data
    for m in re.finditer(rb"<<", buf):
        check(buf, m.start())


SEPARATORS = [b" ", b"\n", b"\r\n", b"\t", b"\x00", b" \n "]
_scalars = st.one_of(
    st.integers(-(10**12), 10**12).map(lambda n: b"%d" % n),
    st.sampled_from([b"1.5", b"-.5", b"3.", b"+2.25", b"+7", b"007", b"-0"]),
    st.tuples(st.integers(0, 10**6), st.integers(0, 99)).map(lambda r: b"%d %d R" % r),
    st.text("AZaz09._-+*!", max_size=6).map(lambda s: b"/" + s.encode()),
    st.sampled_from([b"true", b"false", b"null"]),
    st.text("0123456789abcdefABCDEF", max_size=9).map(lambda s: b"<" + s.encode() + b">"),
    # Without "]" too: an array ends at its first "]" for the fast path (it declines such).
    st.binary(max_size=8).map(lambda b: b"(" + bytes(c for c in b if c not in b"()\\]") + b")"),
)


@st.composite
def _joined(draw: st.DrawFn, tokens: list[bytes]) -> bytes:
    # A separator between tokens; none where a delimiter already parts them.
    out = tokens[0] if tokens else b""
    for token in tokens[1:]:
        bare = token[:1] in (b"/", b"[", b"<", b"(") or out[-1:] in (b"]", b">", b")")
        out += draw(st.sampled_from([b"", *SEPARATORS] if bare else SEPARATORS)) + token
    return out


@st.composite
def _simple(draw: st.DrawFn, depth: int = 0) -> bytes:
    """A dictionary the simple syntax covers, written with varied spacing."""
    parts = [b"<<"]
    for _ in range(draw(st.integers(0, 5))):
        parts.append(b"/" + draw(st.text("ABKxyz", min_size=0, max_size=4)).encode())
        kind = draw(st.integers(0, 5 if depth < 2 else 4))
        if kind == 4:
            parts.append(draw(_joined([b"[", *draw(st.lists(_scalars, max_size=6)), b"]"])))
        elif kind == 5:
            parts.append(draw(_simple(depth + 1)))
        else:
            parts.append(draw(_scalars))
    parts.append(b">>")
    return draw(_joined(parts))


@given(_simple(), st.integers(0, 10**6), st.sampled_from(TOKENS))
def test_simple_dictionaries_are_taken_and_one_odd_token_is_declined_or_read_alike(
    data: bytes, where: int, odd: bytes
) -> None:
    assert check(data + b"\n", 0)  # every dictionary of the simple syntax is taken
    at = where % (len(data) + 1)
    spoiled = data[:at] + odd + data[at:]
    for m in re.finditer(rb"<<", spoiled):
        check(spoiled, m.start())


def test_the_c_version_reads_where_it_was_built() -> None:
    require_built(_pdfobj._simpledict, "cards/_simpledict.c", "Python reads simple dictionaries")
    data = b"<< /A 1 >>"
    c = _pdfobj._simpledict.simple_dict(data, 0, Name, Ref, PlainArray)
    assert simple_dict(data, 0) == c == ({"A": 1}, 10)
    # Not bytes (a bytearray, say): the Python version reads it.
    assert simple_dict(bytearray(data), 0) == ({"A": 1}, 10)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "data",
    [
        b"<< /A 123456789012345678901234567890 /B -0 /C +.5 /D 3. /E 1.25 >>",
        b"<< /A 123456789012345678901234567890 0 R >>",
        b"<< /A <abc> /B <> /C <0> /D () /E (a b) >>",
        b"<< /A << /B << /C 1 >> >> >>",
        b"<< /A << /B << /C << /D 1 >> >> >> >>",
        b"<< /A [1 2 3] /B [] /C [ ] /D [/N true (s) <ff> 1 0 R -.5] >>",
        b"<< /A [" + b" 1 0 R" * 60 + b"] >>",
        b"<< /A [" + b" 1 0 R" * 60 + b" /N] >>",
        b"<< /A 1",
        b"<< /A 1 >",
        b"<< /A",
        b"<< /A#20 1 >>",
        b"<< /A /B#20 >>",
        b"<< /A truex >>",
        b"<< /A 1 0 Rx >>",
        b"<< /A 1 0 R>>",
        b"<</A 1>>",
        b"<< /A [1 2",
        b"<< /A [(a]b)] >>",
        b"<<",
        b"<",
        b"",
    ],
)
def test_edges_read_alike_in_c_and_python(data: bytes) -> None:
    for pos in [-3, -1, *range(len(data) + 3), sys.maxsize - 1, sys.maxsize]:
        alike(data, pos)


def test_a_second_import_of_the_parser_leaves_the_first_reading_alike() -> None:
    # The repository's rooms import under two names (cards._pdfobj beside
    # leanreplay.cards._pdfobj, as tests/test_docstrings.py imports them), and both share the
    # one compiled reader: the values must still be made of each one's own classes.
    other = importlib.import_module("cards._pdfobj")
    assert other is not _pdfobj
    data = b"<< /A 1 0 R /B /N /C [" + b" 1 0 R" * 60 + b"] >>"
    mine, theirs = simple_dict(data, 0), other.simple_dict(data, 0)
    assert mine is not None
    assert theirs is not None
    assert type(mine[0]["A"]) is Ref
    assert type(theirs[0]["A"]) is other.Ref
    assert type(mine[0]["B"]) is Name
    assert type(theirs[0]["B"]) is other.Name
    assert type(mine[0]["C"]) is PlainArray
    assert type(theirs[0]["C"]) is other.PlainArray
    facts = pdf_facts(SAMPLES / "classic_xref.pdf")
    assert (facts.pages, facts.warnings) == (12, [])
