"""The bounded PDF object parser on exact syntax, and on arbitrary bytes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.cards._pdfobj import (
    _SKIP,
    MAX_DEPTH,
    Broken,
    Incomplete,
    Name,
    Parser,
    PlainArray,
    Ref,
    as_list,
    is_int,
)


def _id(value: object) -> str:
    """A test id without backslashes: mutmut passes ids back to pytest, which then finds
    no test for an escaped one."""
    return repr(value).replace("\\", "~")


def parse(data: bytes) -> object:
    return Parser(data, at_eof=True).parse()


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"42", 42),
        (b"-7", -7),
        (b"+3", 3),
        (b"3.25", 3.25),
        (b".5", 0.5),
        (b"-.5", -0.5),
        (b"12 0 R", Ref(12, 0)),
        (b"12 0 Rx", 12),  # not a reference: "Rx" is another token
        (b"true", True),
        (b"false", False),
        (b"null", None),
        (b"/Name", Name("Name")),
        (b"/A#20B", Name("A B")),
        (b"/", Name("")),
        (b"<48656c6c6f>", b"Hello"),
        (b"<48 65 6c 6C 6>", b"Hell`"),  # odd digit count: a trailing 0 is implied
        (b"<4 8\t6\n5>", b"He"),  # white space anywhere, even inside a pair
        (b"(plain)", b"plain"),
        (b"(a (nested) b)", b"a (nested) b"),
        (b"(esc\\n\\r\\t\\b\\f\\(\\)\\\\)", b"esc\n\r\t\b\f()\\"),
        (b"(oct \\101\\60\\7)", b"oct A0\x07"),
        (b"(line \\\ncontinued)", b"line continued"),
        (b"(crlf \\\r\ncontinued)", b"crlf continued"),
        (b"(unknown \\q escape)", b"unknown q escape"),
        (b"[1 2 /X (s)]", [1, 2, Name("X"), b"s"]),
        (b"<< /A 1 /B [2 3] /C << /D null >> >>", {"A": 1, "B": [2, 3], "C": {"D": None}}),
        (b"% comment\n<</K%c\n/V>>", {"K": Name("V")}),
    ],
    ids=_id,
)
def test_parses_pdf_syntax(data: bytes, value: object) -> None:
    assert parse(data) == value


def test_long_plain_arrays_stay_lazy_until_needed() -> None:
    raw = b"[" + b" ".join(b"%d 0 R" % i for i in range(1, 200)) + b"]"
    value = parse(b"<< /Kids " + raw + b" /Count 199 >>")
    assert isinstance(value, dict)
    kids = value["Kids"]
    assert isinstance(kids, PlainArray)
    assert value["Count"] == 199
    assert as_list(kids) == [Ref(i, 0) for i in range(1, 200)]
    assert as_list(5) is None


@pytest.mark.parametrize(
    "data",
    [b"<< /A 1", b"(unterminated", b"[1 2", b"<48", b"12 0", b"/Nam", b"tru"],
    ids=_id,
)
def test_short_window_is_incomplete_and_end_of_file_is_broken(data: bytes) -> None:
    with pytest.raises(Incomplete):
        Parser(data).parse()
    if data not in (b"12 0", b"/Nam", b"tru"):  # complete tokens at end of file
        with pytest.raises(Broken, match="file ends inside"):
            Parser(data, at_eof=True).parse()


def test_a_hex_string_cut_by_the_window_is_incomplete_after_a_closed_dictionary() -> None:
    # A ">" earlier in the window (the dictionary's end) does not close the hex string.
    data = b"<< /A 1 >> <4142"
    with pytest.raises(Incomplete):
        Parser(data, data.index(b"<41")).parse()


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"<< 1 2 >>", "dictionary key is not a name"),
        (b"endobj", "unexpected keyword"),
        (b"}", "unexpected byte"),
        (b"<zz>", "malformed hex string"),
        (b"[" * (MAX_DEPTH + 5), "nested deeper than"),
    ],
    ids=["key", "keyword", "byte", "hex", "depth"],
)
def test_malformed_syntax_is_broken_with_a_reason(data: bytes, match: str) -> None:
    with pytest.raises(Broken, match=match):
        parse(data)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.booleans())
def test_arbitrary_bytes_parse_to_a_pdf_value_or_raise_our_errors(
    data: bytes, at_eof: bool
) -> None:
    parser = Parser(data, at_eof=at_eof)
    try:
        value = parser.parse()
    except (Broken, Incomplete):
        return  # the two documented outcomes for bad or short input
    assert isinstance(
        value, (bool, int, float, bytes, Name, Ref, list, dict, PlainArray, type(None))
    )
    assert 0 < parser.pos <= len(data), "a parsed value consumed bytes within the window"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, True), (-3, True), (True, False), (False, False), (1.0, False), (None, False)],
    ids=_id,
)
def test_is_int_takes_pdf_integers_and_not_pdf_booleans(value: object, expected: bool) -> None:
    assert is_int(value) is expected


# The careful path for numbers: taken when a number sits too close to the window's end for the
# one-match fast path to be sure it is not the start of a reference, or when that match fails.


@pytest.mark.parametrize(
    ("window", "value", "pos"),
    [
        (b"12 0 R" + b" " * 20, Ref(12, 0), 6),  # 24 bytes after "12": enough to decide
        (b"12 5 R" + b" " * 20, Ref(12, 5), 6),
        (b"-7" + b" " * 5, -7, 2),  # a signed number is never a reference
        (b"+7 0 R ", 7, 2),
    ],
    ids=_id,
)
def test_a_number_near_the_window_end_is_decided_with_enough_bytes(
    window: bytes, value: object, pos: int
) -> None:
    parser = Parser(window)  # not at the end of the file
    assert parser.parse() == value
    assert parser.pos == pos


@pytest.mark.parametrize(
    "window",
    [b"12 0 R" + b" " * 19, b"12 0 R", b"7 ", b"1.5", b"-3"],
    ids=_id,
)
def test_a_number_too_close_to_the_window_end_is_incomplete(window: bytes) -> None:
    with pytest.raises(Incomplete):
        Parser(window).parse()


def test_a_number_the_fast_path_refuses_is_read_by_the_careful_one() -> None:
    parser = Parser(b"1.2.3", at_eof=True)  # "1.2" then ".3"
    assert parser.parse() == 1.2
    assert parser.pos == 3
    assert parser.parse() == 0.3
    with pytest.raises(Broken, match="malformed number at byte 0"):
        parse(b"+x")


def test_only_long_plain_arrays_stay_lazy() -> None:
    plain = b"[" + b" ".join(b"%d 0 R" % i for i in range(1, 60)) + b"]"
    assert len(plain) > 256
    # After an earlier array, and followed straight by the next key and another array.
    value = parse(b"<< /A [1] /Kids " + plain + b"/Count 59 /B [2] >>")
    assert isinstance(value, dict)
    assert isinstance(value["Kids"], PlainArray)
    assert value["Kids"].raw == plain
    assert (value["A"], value["Count"], value["B"]) == ([1], 59, [2])
    # A short array late in the window, and a long one that is not all numbers, are lists.
    value = parse(b"<< /Pad (" + b"x" * 300 + b") /A [1 2 3] /N [/X " + plain[1:] + b" >>")
    assert isinstance(value, dict)
    assert value["A"] == [1, 2, 3]
    assert isinstance(value["N"], list)
    assert value["N"][0] == Name("X")
    value = parse(b"[%\n" + plain[1:])  # every byte after the "[" is checked, the first too
    assert isinstance(value, list)
    assert len(value) == 59


@pytest.mark.parametrize(("size", "lazy"), [(256, False), (257, True)])
def test_the_lazy_array_threshold(size: int, lazy: bool) -> None:
    body = b"1" * (size - 1)  # "[" and the digits: ``size`` bytes before the "]"
    value = parse(b"[" + body + b"]")
    assert isinstance(value, PlainArray) is lazy
    assert as_list(value) == [int(body)]


@pytest.mark.parametrize("long", [False, True], ids=["items", "lazy"])
def test_an_array_cut_by_the_end_of_file_says_so(long: bool) -> None:
    data = b"[" + b"1 " * (200 if long else 2)
    with pytest.raises(Broken, match="^file ends inside an array$"):
        parse(data)


def test_arrays_nest_to_max_depth() -> None:
    assert parse(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None
    with pytest.raises(Broken, match="nested deeper than"):
        parse(b"[" * (MAX_DEPTH + 2) + b"]" * (MAX_DEPTH + 2))


def test_dictionaries_nest_to_max_depth() -> None:
    assert parse(b"<< /A " * MAX_DEPTH + b"1" + b" >>" * MAX_DEPTH) is not None
    with pytest.raises(Broken, match="nested deeper than"):
        parse(b"<< /A " * (MAX_DEPTH + 1) + b"1" + b" >>" * (MAX_DEPTH + 1))


@pytest.mark.parametrize("inner", [b"1", b"[1 2]", b"<< /B [1] >>", b"<< /B << /C [1] >> >>"])
def test_the_depth_bound_is_exact_whatever_simple_dict_reads(inner: bytes) -> None:
    # simple_dict reads up to three levels without counting them: the bound must not move.
    depth = {b"1": 0, b"[1 2]": 1, b"<< /B [1] >>": 2, b"<< /B << /C [1] >> >>": 3}[inner]
    fits = MAX_DEPTH - depth
    assert parse(b"<< /A " * fits + inner + b" >>" * fits) is not None
    with pytest.raises(Broken, match="nested deeper than"):
        parse(b"<< /A " * (fits + 1) + inner + b" >>" * (fits + 1))


def test_a_dictionary_cut_by_the_end_of_file_says_so() -> None:
    with pytest.raises(Broken, match="^file ends inside a dictionary$"):
        parse(b"<< /A 1")


def test_nesting_is_bounded_at_max_depth_levels_below_the_top() -> None:
    # The top array is level 0: MAX_DEPTH arrays may sit inside it, one more is refused.
    deepest = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    value = parse(deepest)
    for _ in range(MAX_DEPTH):
        assert isinstance(value, list)
        assert len(value) == 1
        value = value[0]
    assert value == []
    with pytest.raises(Broken, match=f"^objects nested deeper than {MAX_DEPTH} levels$"):
        parse(b"[" + deepest + b"]")


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"", "an object"),
        (b"  % only a comment", "an object"),
        (b"<", "a string or dictionary"),
        (b"<4", "a hex string"),
    ],
    ids=_id,
)
def test_a_file_ending_before_an_object_ends_says_inside_what(data: bytes, what: str) -> None:
    with pytest.raises(Broken) as caught:
        parse(data)
    assert str(caught.value) == f"file ends inside {what}"
    with pytest.raises(Incomplete):  # inside a window: read more
        Parser(data).parse()


def test_a_dictionary_near_the_windows_end_is_read_by_the_careful_path() -> None:
    # Fewer bytes after it than the fast path needs to tell a reference from a number.
    assert Parser(b"<</A 1 /B [2 0 R]>>").parse() == {"A": 1, "B": [Ref(2, 0)]}
    assert Parser(b" <</A (x)>> ").parse() == {"A": b"x"}


def test_a_long_plain_array_ends_at_its_own_bracket() -> None:
    # An array object of its own (the general parser's path, as for a /Kids array stored
    # apart), with brackets before and after it in the window.
    raw = b"[" + b" ".join(b"%d 0 R" % i for i in range(1, 100)) + b"]"
    data = b"[1] " + raw + b" [2] ]"
    parser = Parser(data, 4, at_eof=True)
    value = parser.parse()
    assert isinstance(value, PlainArray)
    assert value.raw == raw
    assert parser.pos == 4 + len(raw)
    assert parser.parse() == [2]


@settings(max_examples=500, deadline=None)
@given(
    buf=st.lists(st.sampled_from([b" ", b"\n", b"\r", b"\t", b"\x00", b"%", b"/", b"1", b"<"])).map(
        b"".join
    ),
    pos=st.integers(0, 12),
)
def test_skip_space_stops_where_the_gap_pattern_ends(buf: bytes, pos: int) -> None:
    # skip_space takes the common gaps (none, or one whitespace byte) without the regex.
    parser = Parser(buf, pos)
    parser.skip_space()
    match = _SKIP.match(buf, pos)
    assert match is not None
    assert parser.pos == match.end()
