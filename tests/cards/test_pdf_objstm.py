"""Objects inside object streams (PDF 1.5), read by the probe from real files whose streams
are right, or wrong in one way each: the xref's index hint, /N, /First, the header, the
/Length (direct, indirect, or encrypted data)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from leanreplay.cards import PdfFacts, _pdfstream, pdf_facts
from leanreplay.cards._pdffile import MAX_STREAM_BYTES
from tests.pdfgen import ObjStm, assemble, three_pages

TREE = three_pages()[2]
OTHERS = {k: v for k, v in three_pages().items() if k != 2}  # catalog and pages, plain
FILLER = b"<< /Filler true >>"


def facts_of(tmp_path: Path, stm: ObjStm, **kw: bytes) -> PdfFacts:
    path = tmp_path / "objstm.pdf"
    path.write_bytes(assemble(OTHERS, (stm,), **kw))
    return pdf_facts(path)


@pytest.mark.parametrize(
    ("members", "hints"),
    [
        ({2: TREE, 7: FILLER}, {}),  # the hint is right
        ({7: FILLER, 2: TREE}, {}),  # right, and not the first member
        ({2: TREE, 7: FILLER}, {2: 1}),  # points at another member
        ({2: TREE, 7: FILLER}, {2: 9}),  # points past the last member
        ({7: FILLER, 8: FILLER, 2: TREE}, {2: 0}),  # points at the first of others
    ],
    ids=["right", "right-second", "wrong", "past-the-end", "wrong-first"],
)
def test_a_member_is_found_by_number_whatever_the_index_hint(
    tmp_path: Path, members: dict[int, bytes], hints: dict[int, int]
) -> None:
    facts = facts_of(tmp_path, ObjStm(6, members, hints=hints))
    assert (facts.pages, facts.warnings) == (3, [])


def test_a_member_found_first_by_number_is_read(tmp_path: Path) -> None:
    # The hint is wrong and the search finds the object at index 0.
    facts = facts_of(tmp_path, ObjStm(6, {2: TREE, 7: FILLER}, hints={2: 5, 7: 5}))
    assert (facts.pages, facts.warnings) == (3, [])


def test_an_indirect_length_is_used_not_the_first_endstream(tmp_path: Path) -> None:
    # Uncompressed, the tree's own bytes hold the word "endstream": only the /Length, an
    # object of its own, tells where the data ends.
    tree = TREE[:-2] + b"/Note (ends at endstream, see) >>"
    stm = ObjStm(6, {2: tree}, length=b"9 0 R", compress=False)
    path = tmp_path / "objstm.pdf"
    path.write_bytes(assemble(OTHERS | {9: b"%d" % len(stm.data())}, (stm,)))
    facts = pdf_facts(path)
    assert (facts.pages, facts.warnings) == (3, [])


@pytest.mark.parametrize("value", [b"12.0", b"true", b"(12)"], ids=["real", "bool", "string"])
def test_an_indirect_length_that_is_not_an_integer_is_not_used(
    tmp_path: Path, value: bytes
) -> None:
    # The stream's end is then found by its "endstream".
    stm = ObjStm(6, {2: TREE}, length=b"9 0 R")
    path = tmp_path / "objstm.pdf"
    path.write_bytes(assemble(OTHERS | {9: value}, (stm,)))
    facts = pdf_facts(path)
    assert (facts.pages, facts.warnings) == (3, [])


def test_a_predicted_object_stream_is_inflated_within_the_limit(tmp_path: Path) -> None:
    # Undoing the predictor needs all the data: past MAX_STREAM_BYTES it is refused.
    stm = ObjStm(6, {2: TREE}, columns=4)
    raw = b"\x02" + b"\x00" * 4
    stm.raw = zlib.compress(raw * (MAX_STREAM_BYTES // 5 + 1))
    facts = facts_of(tmp_path, stm)
    assert any(f"inflates past {MAX_STREAM_BYTES} bytes" in w for w in facts.warnings), (
        facts.warnings
    )
    assert facts.pages == 3


@pytest.mark.parametrize(
    ("stm", "reason"),
    [
        (ObjStm(6, {7: FILLER}), "object 2 is not in object stream 6"),
        (ObjStm(6, {}, n=b"0", first=b"0"), "object 2 is not in object stream 6"),
        (ObjStm(6, {2: TREE}, n=b"-1"), "object stream 6 has invalid /N or /First"),
        (ObjStm(6, {2: TREE}, first=b"-1"), "object stream 6 has invalid /N or /First"),
        (ObjStm(6, {2: TREE}, n=b"(one)"), "object stream 6 has invalid /N or /First"),
        (ObjStm(6, {2: TREE}, first=b"1.5"), "object stream 6 has invalid /N or /First"),
        (ObjStm(6, {2: TREE}, n=b"2"), "object stream 6 header lists fewer than 2 objects"),
        (ObjStm(6, {2: TREE}, header=b"2 zero\n"), "object stream 6 has a malformed header"),
        # NUL separates PDF tokens but not bytes.split() ones: "0\x00" is no number.
        (ObjStm(6, {2: TREE}, header=b"2 0\x00\n"), "object stream 6 has a malformed header"),
        (ObjStm(6, {2: TREE}, data=b"not zlib at all"), "stream at offset"),
        (ObjStm(6, {2: TREE}, header=b"2 -3\n"), "object stream 6 gives object 2 offset -3"),
    ],
    ids=[
        "not-a-member",
        "empty-stream",
        "negative-n",
        "negative-first",
        "n-not-a-number",
        "first-not-an-int",
        "header-too-short",
        "header-not-numbers",
        "header-nul",
        "data-does-not-inflate",
        "negative-offset",
    ],
)
def test_a_broken_object_stream_says_what_is_wrong(
    tmp_path: Path, stm: ObjStm, reason: str
) -> None:
    path = tmp_path / "objstm.pdf"
    data = assemble(OTHERS, (stm,))
    if 2 not in stm.members:  # the xref still sends object 2 to stream 6
        data = _send_object_2_to(data, 6)
    path.write_bytes(data)
    facts = pdf_facts(path)
    assert any(reason in w for w in facts.warnings), facts.warnings
    # The pages are plain objects: the recovery scan counts them.
    assert facts.pages == 3


def _send_object_2_to(data: bytes, stream: int) -> bytes:
    """Rewrite the xref row of object 2 (7-byte rows, uncompressed) to "in ``stream``, 0"."""
    at = data.rindex(b">>\nstream\n") + len(b">>\nstream\n")
    row = bytes([2]) + stream.to_bytes(4, "big") + (0).to_bytes(2, "big")
    return data[: at + 2 * 7] + row + data[at + 3 * 7 :]


def test_an_object_stream_that_does_not_decrypt_needs_the_password(tmp_path: Path) -> None:
    stm = ObjStm(6, {2: TREE}, data=b"ciphertext, as the file is encrypted")
    facts = facts_of(tmp_path, stm, trailer=b"/Encrypt << /Filter /Standard >> ")
    assert facts.pages is None
    assert facts.encrypted
    assert facts.warnings == [
        "page count needs the password: object stream 6 is encrypted; its objects need the password"
    ]


@pytest.mark.parametrize(
    "container",
    [b"<< /Type /ObjStm /N 1 /First 4 >>", b"<< /Length 4 >>\nstream\n2 0 \nendstream"],
    ids=["a-dictionary", "a-stream-of-another-type"],
)
def test_an_object_said_to_be_in_something_else_is_refused(
    tmp_path: Path, container: bytes
) -> None:
    path = tmp_path / "objstm.pdf"
    path.write_bytes(_send_object_2_to(assemble(OTHERS | {6: container}), 6))
    facts = pdf_facts(path)
    assert any("object 6 is not an object stream" in w for w in facts.warnings), facts.warnings
    assert facts.pages == 3


@pytest.mark.parametrize(
    "header",
    [b"2 0\n", b"002 0000\n", b"2\x0b0\x0c\n", b"+2 +0\n", b"2 0 and more\n"],
    ids=["digits", "leading-zeros", "vertical-tab", "signs", "text-past-the-pairs"],
)
def test_a_header_is_read_as_int_reads_its_numbers(tmp_path: Path, header: bytes) -> None:
    # Plain digits are converted when a lookup needs them, anything else all at once by
    # int(): both read "+2" and "002" as 2, and neither looks past the /N pairs.
    facts = facts_of(tmp_path, ObjStm(6, {2: TREE}, header=header))
    assert (facts.pages, facts.warnings) == (3, [])


def test_a_stream_is_inflated_only_as_far_as_the_members_read(tmp_path: Path) -> None:
    # The tree is the first member; the long member after it is never inflated (the real
    # method runs, watched for how much data it holds).
    big = b"<< /Filler [" + b" ".join(b"(%d)" % i for i in range(40_000)) + b"] >>"
    inflated: list[int] = []
    ensure = _pdfstream._Decoded.ensure

    def spy(self: _pdfstream._Decoded, n: int) -> bytes:
        data = ensure(self, n)
        inflated.append(len(data))
        return data

    stm = ObjStm(6, {2: TREE, 7: big})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_pdfstream._Decoded, "ensure", spy)
        facts = facts_of(tmp_path, stm)
    assert (facts.pages, facts.warnings) == (3, [])
    assert max(inflated) < 8 * 1024 < len(big)


def test_a_wrong_hint_at_a_member_whose_offset_is_the_number_is_not_taken(
    tmp_path: Path,
) -> None:
    # Object 9 sits at offset 2 of the stream and the xref's hint for object 2 points at it:
    # only the member's number, not its offset, says whether the hint is right.
    stm = ObjStm(6, {8: b"7", 9: b"7", 2: TREE}, hints={2: 1})
    assert stm._plain()[0].startswith(b"8 0 9 2 2 4\n")
    facts = facts_of(tmp_path, stm)
    assert (facts.pages, facts.warnings) == (3, [])


def test_a_header_that_lists_more_members_than_n_is_read_for_n(tmp_path: Path) -> None:
    # /N 1 and three pairs in the header: the first pair is the one the stream holds.
    stm = ObjStm(6, {2: TREE, 7: FILLER, 8: FILLER}, n=b"1")
    facts = facts_of(tmp_path, stm)
    assert (facts.pages, facts.warnings) == (3, [])
