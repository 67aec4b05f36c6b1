"""conversation_read is bounded and pageable: at most 40,000 chars per answer, the original text
once, images as image parts (never base64 in the text), and the pages spell the original."""

from __future__ import annotations

import base64
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from PIL import Image

from leanreplay.index import InvalidArgumentError, Workspace
from leanreplay.index.faces.server import build_server
from leanreplay.placeholders import ReplayPolicy, is_placeholder, result_slots
from tests.builders import an_call, read_whole, user
from tests.placeholders.test_replay import parse_call

LIMIT = 40_000


def screenshot_b64(width: int = 1200, height: int = 800) -> str:
    """A real PNG with enough noise that its base64 runs to hundreds of thousands of chars."""
    image = Image.effect_noise((width, height), 64).convert("RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def claude_code_screenshot_result(data: str) -> dict[str, Any]:
    """A Claude Code tool result holding a screenshot, as the importer stores it."""
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_shot",
                "content": [
                    {"type": "text", "text": "Screenshot of the panel:\n" + "log line\n" * 3000},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": data},
                    },
                ],
            }
        ],
    }


@pytest.fixture
def shot_ws(tmp_path: Path) -> tuple[Workspace, str, str]:
    data = screenshot_b64()
    ws = Workspace(tmp_path)
    ws.append("c", user("Take a screenshot of the panel."))
    ws.append("c", an_call(("toolu_shot", "screenshot")))
    mid = ws.append("c", claude_code_screenshot_result(data))
    return ws, mid, data


def test_a_screenshot_result_is_paged_with_the_image_as_an_image_part(
    shot_ws: tuple[Workspace, str, str],
) -> None:
    ws, mid, data = shot_ws
    assert len(data) > 300_000
    with ws:
        first = ws.conversation_read("c", mid)
        assert len(json.dumps(first, ensure_ascii=False)) - len(data) <= LIMIT
        whole, pages = read_whole(ws, "c", mid)
        assert whole == claude_code_screenshot_result(data)["content"][0]["content"]
        assert len(pages) >= 1
        for p in pages:
            text = json.dumps({k: v for k, v in p.items() if k != "images"}, ensure_ascii=False)
            assert len(text) <= LIMIT
            assert data[:100] not in p["content"]
            assert "message" not in p  # the original once, not twice
        images = [part for p in pages for part in p["images"]]
        assert images == [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
        ]
        assert ws.messages("c")[2]["content"] == claude_code_screenshot_result(data)["content"]


def test_over_mcp_the_screenshot_is_image_content_and_the_text_is_bounded(
    shot_ws: tuple[Workspace, str, str],
) -> None:
    ws, mid, data = shot_ws

    async def main() -> Any:
        async with Client(build_server(ws)) as client:
            return await client.call_tool(
                "conversation_read", {"conversation_id": "c", "message_id": mid}
            )

    with ws:
        result = anyio.run(main)
    assert result.is_error is False
    texts = [c.text for c in result.content if c.type == "text"]
    images = [c for c in result.content if c.type == "image"]
    assert len("".join(texts)) <= LIMIT
    assert data[:100] not in "".join(texts)
    assert [(i.mime_type, i.data) for i in images] == [("image/png", data)]
    answer = json.loads("".join(texts))
    assert "<image 1: returned as image content>" in answer["content"]


def test_long_text_pages_with_next_calls(tmp_path: Path) -> None:
    text = "".join(f'line {i}: "quoted" \\ tab\t ünï 😀\n' for i in range(6000))
    with Workspace(tmp_path) as ws:
        ws.append("c", an_call(("t1", "bash")))
        mid = ws.append(
            "c",
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": text}],
            },
        )
        whole, pages = read_whole(ws, "c", mid)
        assert whole == text
        assert len(pages) > 5
        for p in pages:
            assert len(json.dumps(p, ensure_ascii=False)) <= LIMIT
        assert pages[0]["next"] == (
            f'conversation_read(conversation_id="c", message_id="{mid}", tool_call_id="t1", '
            f"offset={len(pages[0]['content'])})"
        )
        with pytest.raises(InvalidArgumentError, match="offset 999999999 is past the end"):
            ws.conversation_read("c", mid, offset=999_999_999)
        with pytest.raises(InvalidArgumentError, match="max_chars"):
            ws.call(
                "conversation_read",
                {"conversation_id": "c", "message_id": mid, "max_chars": 50_000},
            )


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(st.characters(exclude_categories=("Cs",)), max_size=9_000),
    max_chars=st.integers(2_000, 6_000),
)
def test_concatenated_pages_are_the_original(text: str, max_chars: int) -> None:
    with tempfile.TemporaryDirectory() as home, Workspace(home) as ws:
        mid = ws.append("c", {"role": "tool", "tool_call_id": "x", "content": text})
        whole, pages = read_whole(ws, "c", mid, max_chars=max_chars)
        assert whole == text
        for p in pages:
            assert len(json.dumps(p, ensure_ascii=False)) <= max_chars
        blocks = [{"type": "text", "text": text}, {"type": "text", "text": text[::-1]}]
        mid = ws.append("c", {"role": "tool", "tool_call_id": "y", "content": blocks})
        whole, pages = read_whole(ws, "c", mid, max_chars=max_chars)
        assert whole == blocks
        assert "".join(p["content"] for p in pages) == json.dumps(blocks, ensure_ascii=False)


def test_the_largest_real_placeholder_reads_in_bounded_pages(transcripts: Path) -> None:
    path = transcripts / "claude-code-m-claude" / "agent-abc3cb6.jsonl"
    with tempfile.TemporaryDirectory() as home, Workspace(home) as ws:
        (cid,) = ws.ingest(path)
        originals = {m["id"]: m for m in ws.messages(cid)}
        largest = 0
        for message in ws.replay(cid, ReplayPolicy(age_unit="assistant_turn")).messages:
            for slot in result_slots(message):
                text = slot.content if isinstance(slot.content, str) else slot.content[0]["text"]
                if not is_placeholder(text):
                    continue
                conv, mid, call = parse_call(text)
                whole, pages = read_whole(ws, conv, mid, call)
                (old,) = [
                    s
                    for s in result_slots(originals[mid])
                    if call is None or s.tool_call_id == call
                ]
                assert whole == old.content
                assert all(len(json.dumps(p, ensure_ascii=False)) <= LIMIT for p in pages)
                # What the unbounded read answered: the result and the whole message beside it.
                unbounded = {"content": old.content, "message": originals[mid]}
                largest = max(largest, len(json.dumps(unbounded, ensure_ascii=False)))
        assert largest > LIMIT  # the unbounded answer overflowed the bound these pages keep
