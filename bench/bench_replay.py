"""Replay over the real transcripts in ../shared/transcripts.

Per source (Claude Code, mini-swe-agent, tau-bench) and age unit: chars in and out and the
elided share. Speed: `replay()` against `json.loads` of the same file (median of repeats),
on the largest single-conversation transcript and on the 200-conversation tau-bench file.
Prompt-cache stability: the conversation is replayed as it stood at each turn (each genuine
user message for "user_exchange", each assistant message for "assistant_turn"); for each pair
of consecutive replays we report the share of the previous request's JSON bytes that the next
one repeats as a common prefix (what a provider's prompt cache can reuse), mean and worst,
with and without `min_savings`.

    python bench/bench_replay.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leanreplay.index import load_log
from leanreplay.placeholders import ReplayPolicy, is_genuine_user, replay

TRANSCRIPTS = Path(__file__).resolve().parent.parent.parent / "shared" / "transcripts"
MIN_SAVINGS_SWEEP = (0, 20_000, 50_000)
SOURCES = {
    "claude-code": "claude-code-m-claude",
    "mini-swe-agent": "mini-swe-agent-pr816",
    "tau-bench": "tau-bench",
}


def median_ms(fn: Callable[[], object], repeats: int = 15) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``fn``."""
    fn()
    times, cpu = [], []
    for _ in range(repeats):
        started, began = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - began)
    return statistics.median(times) * 1000, statistics.median(cpu) * 1000


def conversations_of(path: Path) -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for item in load_log(str(path)):
        messages = [{**m, "id": m.get("id") or f"m{i}"} for i, m in enumerate(item.messages, 1)]
        out.append((item.conversation_id, messages))
    return out


def prefix_reuse(
    messages: list[dict[str, Any]], policy: ReplayPolicy, unit: str
) -> list[tuple[int, int]]:
    """(common prefix bytes, previous request bytes) for each pair of consecutive turns."""
    if unit == "user_exchange":
        points = [i for i, m in enumerate(messages) if is_genuine_user(m)]
    else:
        points = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    points = [p + 1 for p in points] + [len(messages)]
    sizes = {id(m): len(json.dumps(m, ensure_ascii=False)) + 2 for m in messages}
    shares: list[tuple[int, int]] = []
    previous: list[dict[str, Any]] | None = None
    for end in sorted(set(points)):
        if end == 0:
            continue
        current = replay(messages[:end], conversation_id="bench", policy=policy).messages
        if previous is not None:
            total = sum(
                sizes.get(id(m)) or len(json.dumps(m, ensure_ascii=False)) + 2 for m in previous
            )
            common = 0
            for old, new in zip(previous, current, strict=False):
                if old is new:  # replay passes unchanged messages through
                    common += sizes[id(old)]
                    continue
                a, b = json.dumps(old, ensure_ascii=False), json.dumps(new, ensure_ascii=False)
                if a == b:  # an earlier placeholder, rebuilt with the same bytes
                    common += len(a) + 2
                    continue
                common += len(os.path.commonprefix([a, b]))  # noqa: RUF071 - char-wise on purpose
                break
            shares.append((common, total))
        previous = current
    return shares


def main() -> None:
    report: dict[str, Any] = {"sources": {}, "load_before": os.getloadavg()}
    largest: tuple[int, Path] | None = None
    for source, folder in SOURCES.items():
        files = sorted(
            p for p in (TRANSCRIPTS / folder).rglob("*") if p.suffix in (".json", ".jsonl")
        )
        convs = [c for f in files for c in conversations_of(f)]
        row: dict[str, Any] = {"files": len(files), "conversations": len(convs)}
        for unit in ("user_exchange", "assistant_turn"):
            policy = ReplayPolicy(age_unit=unit)  # type: ignore[arg-type]
            chars_in = chars_out = placeholders = 0
            for cid, messages in convs:
                result = replay(messages, conversation_id=cid, policy=policy)
                chars_in += result.chars_in
                chars_out += result.chars_out
                placeholders += result.placeholders
            row[unit] = {
                "chars_in": chars_in,
                "chars_out": chars_out,
                "elided_share": round(1 - chars_out / chars_in, 4) if chars_in else 0.0,
                "placeholders": placeholders,
            }
            for min_savings in MIN_SAVINGS_SWEEP:
                pol = ReplayPolicy(age_unit=unit, min_savings=min_savings)  # type: ignore[arg-type]
                pairs = [p for _, m in convs for p in prefix_reuse(m, pol, unit)]
                shares = [c / t for c, t in pairs if t]
                final_out = sum(
                    replay(m, conversation_id=c, policy=pol).chars_out for c, m in convs
                )
                row[f"prefix_reuse[{unit}, min_savings={min_savings}]"] = {
                    "mean": round(statistics.fmean(shares), 5) if shares else None,
                    "byte_weighted": round(sum(c for c, _ in pairs) / sum(t for _, t in pairs), 5)
                    if pairs
                    else None,
                    "worst": round(min(shares), 5) if shares else None,
                    "turns": len(shares),
                    "final_elided_share": round(1 - final_out / chars_in, 4) if chars_in else 0.0,
                }
        report["sources"][source] = row
        for f in files:
            if len(conversations_of(f)) == 1 and (largest is None or f.stat().st_size > largest[0]):
                largest = (f.stat().st_size, f)
    speed = {}
    assert largest is not None
    targets = {
        "largest_single": largest[1],
        "tau_bench_200": TRANSCRIPTS / "tau-bench" / "gpt-4o-airline.json",
    }
    for label, path in targets.items():
        text = path.read_text(encoding="utf-8")
        convs = conversations_of(path)
        policies = [ReplayPolicy(), ReplayPolicy(age_unit="assistant_turn")]

        def replay_all(
            policy: ReplayPolicy, convs: list[tuple[str, list[dict[str, Any]]]] = convs
        ) -> None:
            for cid, messages in convs:
                replay(messages, conversation_id=cid, policy=policy)

        loads_ms, loads_cpu = median_ms(lambda text=text: json.loads(text))
        entry: dict[str, Any] = {
            "file": str(path.relative_to(TRANSCRIPTS)),
            "bytes": len(text.encode()),
            "messages": sum(len(m) for _, m in convs),
            "json_loads_ms": round(loads_ms, 3),
            "json_loads_cpu_ms": round(loads_cpu, 3),
        }
        for policy in policies:
            ms, cpu = median_ms(lambda policy=policy: replay_all(policy))
            entry[f"replay_ms[{policy.age_unit}]"] = round(ms, 3)
            entry[f"replay_cpu_ms[{policy.age_unit}]"] = round(cpu, 3)
            entry[f"ratio_replay_over_json_loads[{policy.age_unit}]"] = round(ms / loads_ms, 3)
        speed[label] = entry
    report["speed"] = speed
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
