"""The Claude Code importer reads only the fields it needs from each line (msgspec steps over
the rest); what it imports must be what reading every line whole gives. The oracle below is
the importer's rule written over whole records (``json.loads`` of each line)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from leanreplay.index.store._importers import UNREADABLE, _claude_code
from leanreplay.placeholders import SPLIT_KEY, is_injected_text

KINDS = ("user", "assistant")


def _whole(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _injected(content: Any) -> bool:
    if isinstance(content, str):
        return is_injected_text(content)
    if not isinstance(content, list):
        return False
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    others = [
        b for b in content if isinstance(b, dict) and b.get("type") not in ("text", "tool_result")
    ]
    return (
        bool(texts)
        and not others
        and all(isinstance(t, str) and is_injected_text(t) for t in texts)
    )


def oracle(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    values = [_whole(line) for line in text.split("\n") if line and not line.isspace()]
    broken = sum(not isinstance(v, dict) for v in values)
    records = [v for v in values if isinstance(v, dict) and v.get("type") in KINDS]
    main = [r for r in records if not r.get("isSidechain")]
    notes = [f"{broken} {UNREADABLE}"] if broken else []
    if not main and records:
        main = records
        notes.append(f"subagent log: its {len(records)} sidechain records form the conversation")
    elif len(main) < len(records):
        notes.append(f"{len(records) - len(main)} sidechain records skipped")
    messages = []
    for record in main:
        message = record.get("message")
        if not isinstance(message, dict) or message.get("role") not in KINDS:
            continue
        role, content = message["role"], message.get("content")
        new: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant" and not isinstance(content, list):
            new["content"] = [{"type": "text", "text": content or ""}]
        if isinstance(record.get("uuid"), str) and record["uuid"]:
            new["id"] = record["uuid"]
        if role == "assistant" and isinstance(message.get("id"), str):
            new[SPLIT_KEY] = message["id"]
        if role == "user" and (
            record.get("isMeta") or record.get("isCompactSummary") or _injected(content)
        ):
            new["meta"] = True
        messages.append(new)
    return messages, notes


anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
blocks = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "tool_result", "tool_use", "image"])},
        optional={
            "text": st.sampled_from(["hi", "<command-name>/x</command-name>", ""]) | anything
        },
    ),
    max_size=3,
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from([*KINDS, "system"]) | anything,
        "content": st.text(max_size=10)
        | blocks
        | st.sampled_from(["<command-name>/clear</command-name>", "Caveat: x"])
        | anything,
        "id": st.text(max_size=6) | anything,
        "usage": anything,
        "model": st.text(max_size=6),
    },
)
records = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from([*KINDS, "summary", "progress"]) | anything,
        "isSidechain": st.booleans() | anything,
        "message": messages | anything,
        "uuid": st.text(max_size=6) | anything,
        "isMeta": st.booleans() | anything,
        "isCompactSummary": st.booleans() | anything,
        "toolUseResult": anything,
        "sessionId": st.just("s"),
    },
)
plausible = st.fixed_dictionaries(
    {
        "type": st.sampled_from(KINDS),
        "message": st.fixed_dictionaries(
            {"role": st.sampled_from(KINDS), "content": st.text(max_size=10) | blocks},
            optional={"id": st.sampled_from(["msg_1", "msg_2"])},
        ),
    },
    optional={
        "uuid": st.sampled_from(["u1", "u2", ""]),
        "isSidechain": st.booleans(),
        "isMeta": st.booleans(),
        "isCompactSummary": st.booleans(),
        "toolUseResult": anything,
    },
)
lines = st.lists(
    plausible.map(json.dumps)
    | records.map(json.dumps)
    | records.map(lambda r: json.dumps(r, ensure_ascii=False))  # raw UTF-8: U+2028, NEL ...
    | st.sampled_from(
        ["\u3000", "\x1c\x0b", " \u2028 ", "\u00a0{}", "\x85"]  # blank as text, not as bytes
    )
    | st.sampled_from(
        [
            '{"type": "user", "message": {"role": "us',  # cut
            '{"type": "user", "x": NaN, "message": {"role": "user", "content": "nan"}}',
            '{"type": "user", "message": {"role": "user", "content": "\\ud800 lone"}}',
            '{"type": "user", "message": "not an object"}',
            '["a", "list"]',
            "42",
            "   ",
            '{"type": "user", "message": {"role": "user", "content": "x"}} trailing',
            '{"type": "user", "type": "assistant", '  # a repeated key: the last counts
            '"message": {"role": "assistant", "content": "dup"}}',
        ]
    ),
    max_size=12,
)


@settings(max_examples=300)
@given(lines, st.booleans())
def test_the_typed_read_imports_what_whole_records_give(lines: list[str], crlf: bool) -> None:
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    loaded = _claude_code(text.encode("utf-8"), "session")
    assert (loaded.messages, loaded.notes) == oracle(text)
