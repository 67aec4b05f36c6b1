"""The rolling prefix fold as a conversation grows: replay size per turn (the sawtooth).

A synthetic conversation is grown turn by turn past 2,000,000 chars through
`Workspace.append` (auto-fold on, offline summarizer); after every turn the replay is built
and its size recorded, with placeholders (``chars_out``) and without them (``chars_in``, the
fold alone). The same is done with real transcripts from ../shared/transcripts: the largest
Claude Code session and the largest mini-swe-agent run, appended message by message. The
printed series is the library's `Workspace.size_series` (what ``leanreplay view`` draws),
checked against the sizes observed while growing (``series_matches_growth``). Prints JSON:
peak replay size against the unfolded size, folds, and a sampled sawtooth.

    python bench/bench_fold.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leanreplay.index import Workspace, load_log
from leanreplay.placeholders import FoldPolicy, ReplayPolicy, content_chars, is_genuine_user

TRANSCRIPTS = Path(__file__).resolve().parent.parent.parent / "shared" / "transcripts"
POLICY = FoldPolicy()  # 120,000 chars, keep the last 8, 6,000-char summaries


def synthetic_turn(i: int) -> list[dict[str, Any]]:
    log = "".join(
        f"step {i}.{n}: module {n} built in {n % 7 + 1}ms, 0 warnings\n" for n in range(120)
    )
    return [
        {
            "role": "user",
            "content": f"Run build #{i} with the {['fast', 'full', 'debug'][i % 3]} profile.",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "make"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"c{i}", "content": log},
        {"role": "assistant", "content": f"Build #{i} passed; 120 modules, no warnings."},
    ]


def grow(
    ws: Workspace, cid: str, turns: list[list[dict[str, Any]]], policy: ReplayPolicy | None = None
) -> dict[str, Any]:
    observed = []
    total = 0
    started = time.perf_counter()
    for turn in turns:
        for message in turn:
            ws.append(cid, message)
            total += content_chars(message)
        result = ws.replay(cid, policy)
        observed.append((total, result.chars_in, result.chars_out))
    elapsed = time.perf_counter() - started
    started = time.perf_counter()
    series = ws.size_series(cid, policy)
    series_seconds = time.perf_counter() - started
    state = ws.fold_state(cid) or {}
    step = max(1, len(series) // 40)
    return {
        "turns": len(series),
        "stored_chars": total,
        "folds": state.get("generation", 0),
        "peak_replay_chars_fold_only": max(p.replay_chars_fold_only for p in series),
        "peak_replay_chars_with_placeholders": max(p.replay_chars for p in series),
        "final_replay_chars_with_placeholders": series[-1].replay_chars,
        "peak_over_unfolded": round(max(p.replay_chars_fold_only for p in series) / total, 4),
        "bound_threshold_plus_summary_plus_turn": POLICY.threshold_chars
        + POLICY.max_summary_chars
        + max(sum(content_chars(m) for m in t) for t in turns),
        "seconds": round(elapsed, 2),
        "series_seconds": round(series_seconds, 2),
        "series_matches_growth": [
            (p.stored_chars, p.replay_chars_fold_only, p.replay_chars) for p in series
        ]
        == observed,
        "sawtooth_sampled": [
            {
                "stored": p.stored_chars,
                "replay_fold_only": p.replay_chars_fold_only,
                "replay": p.replay_chars,
            }
            for p in series[::step]
        ],
    }


def turns_of(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Split a transcript into turns at each genuine user message."""
    turns: list[list[dict[str, Any]]] = []
    for message in messages:
        if is_genuine_user(message) or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def largest(folder: str, pattern: str) -> tuple[Path, list[dict[str, Any]]]:
    best: tuple[int, Path, list[dict[str, Any]]] | None = None
    for path in sorted((TRANSCRIPTS / folder).rglob(pattern)):
        for item in load_log(str(path)):
            size = sum(content_chars(m) for m in item.messages)
            if best is None or size > best[0]:
                best = (size, path, item.messages)
    assert best is not None
    return best[1], best[2]


def main() -> None:
    report: dict[str, Any] = {"policy": POLICY.__dict__}
    with tempfile.TemporaryDirectory(prefix="bench_fold_") as tmp:
        with Workspace(Path(tmp) / "synthetic", fold_policy=POLICY) as ws:
            turns = []
            total = i = 0
            while total <= 2_000_000:
                turns.append(synthetic_turn(i))
                total += sum(content_chars(m) for m in turns[-1])
                i += 1
            report["synthetic"] = grow(ws, "synthetic", turns)
        for label, folder, pattern in (
            ("claude_code_largest", "claude-code-m-claude", "*.jsonl"),
            ("mini_swe_agent_largest", "mini-swe-agent-pr816", "*.traj.json"),
        ):
            path, messages = largest(folder, pattern)
            # A single-task agent loop is one user exchange: age its results by assistant turns.
            loop = ReplayPolicy(age_unit="assistant_turn") if "swe" in label else None
            with Workspace(Path(tmp) / label, fold_policy=POLICY) as ws:
                entry = grow(ws, label, turns_of(messages), loop)
                entry["replay_age_unit"] = loop.age_unit if loop else "user_exchange"
                entry["file"] = str(path.relative_to(TRANSCRIPTS))
                entry["genuine_user_turns"] = sum(is_genuine_user(m) for m in messages)
                report[label] = entry
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
