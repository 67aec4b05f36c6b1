"""Fresh oversized results are cut at once; placeholders preview what the policy's shape says."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.placeholders import (
    CUT_MARKER,
    PREVIEW_PARTS,
    InvalidPolicyError,
    ReplayPolicy,
    check_pairing,
    content_chars,
    parse_cut,
    parse_read_call,
    replay,
)
from tests.builders import (
    IMAGE_B64,
    an_call,
    an_results,
    assistant,
    conversations,
    dumps,
    oa_call,
    oa_result,
    user,
    with_ids,
)

BIG = "".join(f"line {n}: value {n * 7}\n" for n in range(12_000))  # ~250 KB


def fresh(content: Any) -> list[dict[str, Any]]:
    return with_ids([user("read the log"), oa_call(("c1", "bash")), oa_result("c1", content)])


def test_a_fresh_giant_result_is_cut_to_its_ends_and_the_call_for_the_rest() -> None:
    messages = fresh(BIG)
    result = replay(messages, conversation_id="conv")
    text = result.messages[2]["content"]
    assert text.startswith(CUT_MARKER)
    header, _, body = text.partition("\n")
    assert f"({len(BIG):,} chars, 12,000 lines)" in header
    assert "over the 20,000-char cap for a fresh result" in header
    assert body.startswith(BIG[:2000])
    assert body.endswith(BIG[-2000:])
    assert f"[... {len(BIG) - 4000:,} chars not shown ...]" in body
    call = parse_read_call(header)
    assert call == {"conversation_id": "conv", "message_id": "m3", "offset": 2000}
    assert header.endswith(
        'conversation_read(conversation_id="conv", message_id="m3", offset=2000)'
    )
    cut = parse_cut(text)
    assert cut is not None
    assert (cut.size, cut.lines, cut.head, cut.tail) == (len(BIG), 12_000, BIG[:2000], BIG[-2000:])
    assert result.placeholders == 1
    assert result.elided_chars == len(BIG) - 4000
    assert result.chars_out == content_chars(result.messages[0]) + len(text) + len('{"q": 1}')
    assert replay(result.messages, conversation_id="conv").messages == result.messages
    assert check_pairing(result.messages) == []


def test_the_cap_and_the_kept_ends_are_the_policy_s() -> None:
    policy = ReplayPolicy(fresh_cap_chars=300_000)
    assert replay(fresh(BIG), conversation_id="c", policy=policy).placeholders == 0
    policy = ReplayPolicy(fresh_cap_chars=10_000, fresh_keep_chars=501)
    cut = parse_cut(replay(fresh(BIG), conversation_id="c", policy=policy).messages[2]["content"])
    assert cut is not None
    assert (len(cut.head), len(cut.tail)) == (251, 250)
    for off in (None, ReplayPolicy.seed()):
        kept = replay(
            fresh(BIG), conversation_id="c", policy=off or ReplayPolicy(fresh_cap_chars=None)
        )
        assert kept.messages[2]["content"] == BIG


@pytest.mark.parametrize(("chars", "cut"), [(20_000, False), (20_001, True)], ids=str)
def test_the_default_cap_is_20_000_chars(chars: int, cut: bool) -> None:
    """The default cap (bench_cost's sweep chose it): a fresh result of 20,000 chars goes
    whole, one char more is cut to its first and last 2,000."""
    assert ReplayPolicy().fresh_cap_chars == 20_000
    text = BIG[:chars]
    result = replay(fresh(text), conversation_id="c")
    shown = result.messages[2]["content"]
    assert (shown == text) == (not cut)
    assert shown.startswith(CUT_MARKER) == cut
    assert result.placeholders == int(cut)
    if cut:
        parsed = parse_cut(shown)
        assert parsed is not None
        assert (parsed.size, parsed.head, parsed.tail) == (chars, text[:2000], text[-2000:])
        assert result.elided_chars == chars - 4000


def test_text_blocks_are_cut_images_are_left_to_the_compactor() -> None:
    blocks = [{"type": "text", "text": BIG[:30_000]}, {"type": "text", "text": BIG[30_000:]}]
    result = replay(fresh(blocks), conversation_id="c")
    new = result.messages[2]["content"]
    assert [b["type"] for b in new] == ["text"]
    assert new[0]["text"].startswith(CUT_MARKER)
    # Structured content is read back as its JSON, from the start: the call has no offset.
    assert 'message_id="m3")\n' in new[0]["text"]
    with_image = [
        {"type": "text", "text": BIG},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": IMAGE_B64},
        },
    ]
    messages = with_ids(
        [user("look"), an_call(("t1", "shot")), an_results(("t1", with_image, False))]
    )
    assert replay(messages, conversation_id="c").messages[2] == messages[2]


def test_a_cut_result_that_goes_stale_becomes_a_placeholder_of_the_original() -> None:
    messages = fresh(BIG) + with_ids([assistant("seen")])[:0]
    messages = with_ids(
        [
            user("read the log"),
            oa_call(("c1", "bash")),
            oa_result("c1", 'Traceback (most recent call last):\n  File "src/app/main.py"\n' + BIG),
            assistant("it failed"),
            user("next"),
            assistant("ok"),
            user("and next"),
            assistant("ok"),
            user("last"),
        ]
    )
    eager = ReplayPolicy(timing="eager", preview_shape=PREVIEW_PARTS)
    cut = replay(messages, conversation_id="c", policy=replace(eager, keep_user_exchanges=9))
    assert cut.messages[2]["content"].startswith(CUT_MARKER)
    stale = replay(messages, conversation_id="c", policy=eager)
    text = stale.messages[2]["content"]
    original = messages[2]["content"]
    assert text.startswith(f'[elided tool result] Output of tool "bash" ({len(original):,} chars')
    assert 'Error lines: "Traceback (most recent call last):"' in text
    assert '"src/app/main.py"' in text
    assert text.endswith('Full original: conversation_read(conversation_id="c", message_id="m3")')
    assert stale.placeholders == 1
    assert stale.elided_chars == len(original)
    # From the cut form, the same placeholder, byte for byte.
    assert replay(cut.messages, conversation_id="c", policy=eager).messages == stale.messages


def test_preview_shapes_show_head_tail_errors_and_paths_bounded() -> None:
    text = (
        "collecting tests in ./tests/test_api.py\n"
        + "ok\n" * 900
        + "E   AssertionError: expected 3, got 4\n"
        + "see https://example.com/docs/page.html and /usr/lib/python3.11/json/decoder.py\n"
        + "FAILED tests/test_api.py::test_add - AssertionError\n"
        + "error: could not compile\n"
        + "fatal: not a git repository\n"
        + "".join(f"touched src/mod{n}.py\n" for n in range(20))
        + "1/2 done\nthe end"
    )
    messages = with_ids(
        [user("run"), oa_call(("c1", "pytest")), oa_result("c1", text), assistant("x"), user("y")]
    )
    base = ReplayPolicy(
        timing="eager", keep_user_exchanges=1, age_unit="user_exchange", preview_chars=200
    )

    def shown(shape: tuple[str, ...]) -> str:
        out = replay(messages, conversation_id="c", policy=replace(base, preview_shape=shape))
        placeholder: str = out.messages[2]["content"]
        assert placeholder.startswith("[elided tool result]")
        return placeholder

    head = shown(("head",))
    assert 'Head: "collecting tests in ./tests/test_api.py\\nok' in head
    assert "Tail:" not in head
    tail = shown(("tail",))
    assert "Head:" not in tail
    assert tail.count('the end"') == 1
    assert 'Tail: ..."' in tail
    errors = shown(("errors",))
    assert (
        'Error lines: "E   AssertionError: expected 3, got 4" | "FAILED tests/test_api.py::test_add'
        ' - AssertionError" | "error: could not compile"'
    ) in errors
    assert "fatal" not in errors, "at most three error lines"
    paths = shown(("paths",))
    assert (
        'Paths: "./tests/test_api.py", "/usr/lib/python3.11/json/decoder.py", '
        '"tests/test_api.py", "src/mod0.py", "src/mod1.py" '
    ) in paths
    assert "example.com" not in paths
    assert "1/2" not in paths
    everything = shown(("paths", "errors", "tail", "head"))  # rendered in one order
    assert everything.index("Head:") < everything.index("Tail:") < everything.index("Error")
    assert everything.index("Error lines:") < everything.index("Paths:")
    assert len(everything) < 200 + 200 + 3 * 170 + 5 * 130 + 400
    assert everything == shown(tuple(PREVIEW_PARTS))


@pytest.mark.parametrize(
    ("shape", "match"),
    [("head", "collection of"), (("head", "middle"), "holds 'middle'"), (3, "collection of")],
    ids=["a string", "an unknown part", "not a collection"],
)
def test_a_bad_preview_shape_is_refused(shape: Any, match: str) -> None:
    with pytest.raises(InvalidPolicyError, match=match):
        ReplayPolicy(preview_shape=shape)


@pytest.mark.parametrize(
    ("cap", "keep", "match"),
    [
        (0, 10, "fresh_cap_chars must be >= 1"),
        (1000, 1000, r"fresh_keep_chars must be < fresh_cap_chars \(1,000\)"),
    ],
    ids=["no cap", "keeps it all"],
)
def test_a_bad_cap_is_refused(cap: int, keep: int, match: str) -> None:
    with pytest.raises(InvalidPolicyError, match=match):
        ReplayPolicy(fresh_cap_chars=cap, fresh_keep_chars=keep)


CAPPED = [
    ReplayPolicy(fresh_cap_chars=2400, fresh_keep_chars=600),
    ReplayPolicy(fresh_cap_chars=2400, fresh_keep_chars=0, preview_shape=PREVIEW_PARTS),
    ReplayPolicy(fresh_cap_chars=1000, fresh_keep_chars=999, timing="eager", min_savings=3000),
    ReplayPolicy(fresh_cap_chars=5000, keep_assistant_turns=1, preview_shape=("tail", "paths")),
]


@settings(max_examples=80, deadline=None)
@given(messages=conversations(), policy=st.sampled_from(CAPPED))
def test_cut_replays_are_pure_deterministic_idempotent_and_keep_pairing(
    messages: list[dict[str, Any]], policy: ReplayPolicy
) -> None:
    before = copy.deepcopy(messages)
    first = replay(messages, conversation_id="c", policy=policy)
    assert messages == before, "input mutated"
    assert dumps(replay(copy.deepcopy(messages), conversation_id="c", policy=policy).messages) == (
        dumps(first.messages)
    )
    again = replay(first.messages, conversation_id="c", policy=policy)
    assert dumps(again.messages) == dumps(first.messages)
    assert check_pairing(first.messages) == []
    assert first.chars_out == sum(content_chars(m) for m in first.messages)
    for old, new in zip(messages, first.messages, strict=True):
        assert content_chars(new) <= content_chars(old)


def test_a_giant_result_without_an_id_is_left_whole() -> None:
    messages = [user("read"), oa_call(("c1", "bash")), oa_result("c1", BIG)]
    assert replay(messages, conversation_id="c").messages[2]["content"] == BIG
