"""What the offline summary names, on real shared transcripts: every file the folded
messages' tools touched, each user request's distinctive words, and a preamble that says how
to find the rest (bench/bench_fold_recall.py measures the same over every folded region)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from leanreplay.index import Workspace
from leanreplay.placeholders import (
    OfflineSummarizer,
    call_inputs,
    folded_prefix,
    is_genuine_user,
)
from leanreplay.placeholders._shapes import text_of
from tests.conftest import TRANSCRIPTS, require_transcripts

# The two shared sessions whose tools touch files (a subagent's log and a Swift session).
SESSIONS = [
    "claude-code-m-claude/agent-abc3cb6.jsonl",
    "claude-code-m-claude/554b9fa6-f719-40e8-ba70-beee69bd60b5.jsonl",
]


def stored(tmp_path: Path, name: str) -> list[dict[str, object]]:
    require_transcripts()
    with Workspace(tmp_path, auto_fold=False) as ws:
        (cid,) = ws.ingest(TRANSCRIPTS / name)
        return ws.messages(cid)


@pytest.mark.parametrize("name", SESSIONS, ids=lambda n: Path(n).stem)
def test_the_summary_names_every_file_its_messages_touched(tmp_path: Path, name: str) -> None:
    messages = stored(tmp_path, name)
    touched = set()
    for message in messages:
        for _, value in call_inputs(message):
            args = json.loads(value) if isinstance(value, str) else value
            for key in ("file_path", "path", "notebook_path"):
                if isinstance(args, dict) and isinstance(args.get(key), str):
                    touched.add(args[key].strip())
    assert len(touched) >= 5, touched
    summary = OfflineSummarizer()(None, messages, max_chars=6_000)
    assert len(summary) <= 6_000
    missing = sorted(p for p in touched if f"- {p} (" not in summary)
    assert missing == [], summary


def test_a_long_request_is_named_by_its_words_past_the_head(tmp_path: Path) -> None:
    messages = stored(tmp_path, SESSIONS[0])
    (request,) = [m for m in messages if is_genuine_user(m)]
    text = text_of(request)
    assert len(text) > 240  # longer than the head the summary shows
    words = sorted(set(re.findall(r"[A-Za-z][A-Za-z'\-]{4,}", text)), key=lambda w: (-len(w), w))
    summary = OfflineSummarizer()(None, messages, max_chars=6_000).lower()
    assert all(w.lower() in summary for w in words[:5]), (words[:5], summary[:600])


def test_the_preamble_says_how_to_find_what_the_summary_leaves_out() -> None:
    (preamble, _) = folded_prefix("conv-1", "User requests:\n- [m1] Fix it.", "m9", 1)
    text = preamble["content"]
    assert 'conversation_search(query="' in text
    assert 'conversation_id="conv-1"' in text
    assert 'conversation_read(conversation_id="conv-1", message_id="MESSAGE_ID")' in text
    assert "leaves most details out" in text
