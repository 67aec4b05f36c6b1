"""One content-block text walker: the fold's text_of, a result's text and the message index
read the same texts out of the same blocks."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from leanreplay.index.search._convindex import message_text
from leanreplay.placeholders import result_slots
from leanreplay.placeholders._shapes import block_text, one_line, text_of, text_parts

TEXT = st.text(alphabet="abc xyz", min_size=1, max_size=8)
BLOCKS = st.one_of(
    TEXT,
    st.builds(lambda k, t: {"type": k, "text": t}, st.sampled_from(["text", "input_text"]), TEXT),
    st.builds(lambda t: {"type": "output_text", "text": t}, TEXT),
    st.just({"type": "text", "text": None}),
    st.just({"type": "image", "source": {"type": "base64", "data": "AAAA"}}),
    st.just({"type": "input_image", "image_url": "data:image/png;base64,AAAA"}),
    st.just({"type": "refusal", "refusal": "no"}),
    st.just(7),
)


def expected(blocks: list[Any]) -> list[str]:
    # Written from the rule: strings, and the str text of text / input_text / output_text.
    out = []
    for b in blocks:
        if isinstance(b, str):
            out.append(b)
        elif (
            isinstance(b, dict)
            and b.get("type") in ("text", "input_text", "output_text")
            and isinstance(b.get("text"), str)
        ):
            out.append(b["text"])
    return out


@given(st.lists(BLOCKS, max_size=6))
def test_every_reader_takes_the_same_texts(blocks: list[Any]) -> None:
    texts = expected(blocks)
    assert list(text_parts(blocks)) == texts
    assert [t for b in blocks if (t := block_text(b)) is not None] == texts
    assert text_of({"role": "user", "content": blocks}) == " ".join(texts)
    result = {"role": "tool", "tool_call_id": "c1", "content": blocks}
    (slot,) = result_slots(result)
    assert slot.text() == "\n".join(texts)
    indexed, _ = message_text({"role": "user", "content": blocks})
    assert indexed == "\n".join(texts)


@given(TEXT)
def test_a_string_content_is_its_own_text(text: str) -> None:
    assert list(text_parts(text)) == [text]
    assert text_of({"role": "user", "content": text}) == text
    assert list(text_parts(None)) == []


@given(st.text(alphabet=" a\n\tb\u3000é", max_size=80), st.integers(0, 40))
def test_one_line_collapses_all_the_whitespace_then_cuts(text: str, limit: int) -> None:
    # The oracle splits every word; one_line splits off only as many as it can show.
    flat = " ".join(text.split())
    assert one_line(text, limit) == (flat if len(flat) <= limit else flat[: limit - 3] + "...")
