"""What a model can still find after a fold, on the shared Claude Code sessions.

Every session is ingested into a real Workspace (SQLite store, Tantivy index), which folds it
as `Workspace.append` would have. The same folds are replayed here (the same `FoldPolicy`
and offline summarizer, message by message) to know each folded region and the summary the
model is given right after it. From each region's messages come probes:

- ``file``: every path a tool call touched (``file_path``, ``path``, ...);
- ``command``: every command run;
- ``error``: the first line of every error result;
- ``request``: each genuine user request's distinctive words (its five longest words).

A probe is *answered by the summary* when the summary names it: the path, the command's
first 60 chars, the error line's first 60 chars, or at least 3 of the request's 5 words.
Every other probe is searched with ``conversation_search(query, conversation_id, limit=5)``;
it is *found* when one of the 5 hits is a message of the region that holds it (recall@5).

    python bench/bench_fold_recall.py     # JSON: shares per kind, floors, and the misses
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._billing import call_targets
from leanreplay.index import Workspace, load_log
from leanreplay.index.lifecycle._fold import _fold_step
from leanreplay.index.store._store import FoldRecord
from leanreplay.placeholders import (
    STUB_TEXT,
    FoldPolicy,
    OfflineSummarizer,
    content_chars,
    is_genuine_user,
    repair_pairing,
    result_slots,
)
from leanreplay.placeholders._shapes import text_of

TRANSCRIPTS = Path(__file__).resolve().parent.parent.parent / "shared" / "transcripts"
FOLDER = "claude-code-m-claude"
HEAD = 60
_ERROR_HINTS = ("Traceback (most recent call last)", "Error:", "error:", "ERROR", "Exception")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{4,}")


@dataclass(frozen=True)
class Region:
    start: int
    end: int
    summary: str


@dataclass(frozen=True)
class Probe:
    kind: str
    text: str  # what the summary must name (lowercase comparison for requests)
    query: str
    sources: frozenset[str]  # message ids of the region that hold it
    words: tuple[str, ...] = ()


def one_line(text: str) -> str:
    return " ".join(text.split())


def folds(messages: Sequence[Mapping[str, Any]], policy: FoldPolicy) -> list[Region]:
    """Each fold `Workspace.append` makes as the messages arrive, with its summary."""
    summarizer = OfflineSummarizer()
    fold: FoldRecord | None = None
    regions: list[Region] = []
    unsummarized = 0
    users: list[int] = []
    for i, message in enumerate(messages):
        if is_genuine_user(message):
            users.append(i)
        unsummarized += content_chars(message)
        start = fold.through_seq if fold else 0
        if unsummarized <= policy.threshold_chars:
            continue
        last = min(i + 1 - policy.keep_last, i)
        if not any(start < u <= last for u in users):
            continue
        step = _fold_step(messages[: i + 1], fold, policy, summarizer)
        if isinstance(step, tuple):
            boundary, summary, _ = step
            regions.append(Region(start, boundary, summary))
            generation = (fold.generation if fold else 0) + 1
            fold = FoldRecord(summary, boundary, str(messages[boundary - 1]["id"]), generation)
            unsummarized = sum(content_chars(m) for m in messages[boundary : i + 1])
    return regions


def ids_of(message: Mapping[str, Any]) -> list[str]:
    ids = message.get("block_ids")
    return [str(i) for i in ids] if isinstance(ids, list) else [str(message.get("id"))]


def probes(messages: Sequence[Mapping[str, Any]]) -> list[Probe]:
    found: dict[tuple[str, str], tuple[str, set[str], tuple[str, ...]]] = {}
    call_message: dict[str, list[str]] = {}

    def add(kind: str, text: str, query: str, sources: list[str], words: tuple[str, ...] = ()):
        key = (kind, text)
        if key not in found:
            found[key] = (query, set(), words)
        found[key][1].update(sources)

    for message in messages:
        mids = ids_of(message)
        if is_genuine_user(message):
            words = sorted(set(_WORD.findall(text_of(message))), key=lambda w: (-len(w), w))[:5]
            if words:
                add(
                    "request",
                    one_line(text_of(message))[:HEAD],
                    " ".join(words),
                    mids,
                    tuple(words),
                )
        if message.get("role") == "assistant":
            for call_id, path, command in call_targets(message):
                call_message[call_id] = mids
                if path:
                    add("file", path, path, mids)
                if command:
                    head = one_line(command)[:HEAD]
                    add("command", head, one_line(command)[:200], mids)
        for slot in result_slots(message):
            text = slot.text()
            if text == STUB_TEXT:
                continue  # a stub the replay added for an unanswered call, not an error
            if slot.is_error or any(h in text[:400] for h in _ERROR_HINTS):
                line = next((one_line(x) for x in text.splitlines() if x.strip()), "")
                if line:
                    add("error", line[:HEAD], line[:200], mids)
    return [
        Probe(kind, text, query, frozenset(sources), words)
        for (kind, text), (query, sources, words) in found.items()
    ]


def named(probe: Probe, summary: str) -> bool:
    if probe.kind == "request":
        low = summary.lower()
        return sum(w.lower() in low for w in probe.words) >= min(3, len(probe.words))
    return probe.text in one_line(summary) or probe.text in summary


def measure(policy: FoldPolicy, tmp: str) -> dict[str, Any]:
    kinds = ("file", "command", "error", "request")
    totals = {k: {"probes": 0, "summary": 0, "search": 0} for k in kinds}
    misses: list[dict[str, str]] = []
    sessions = []
    if True:
        with Workspace(Path(tmp) / f"home-{policy.threshold_chars}", fold_policy=policy) as ws:
            for path in sorted((TRANSCRIPTS / FOLDER).glob("*.jsonl")):
                (cid,) = list(ws.ingest(path))
                (item,) = load_log(str(path))
                messages = [
                    {**m, "id": m.get("id") or f"m{i}"} for i, m in enumerate(item.messages, 1)
                ]
                messages = repair_pairing(messages)[0]
                regions = folds(messages, policy)
                state = ws.fold_state(cid) or {}
                sessions.append(
                    {
                        "session": path.stem,
                        "regions": len(regions),
                        "stored_folds": state.get("generation", 0),
                    }
                )
                for region in regions:
                    for probe in probes(messages[region.start : region.end]):
                        tally = totals[probe.kind]
                        tally["probes"] += 1
                        if named(probe, region.summary):
                            tally["summary"] += 1
                            continue
                        hits = ws.conversation_search(probe.query, conversation_id=cid, limit=5)
                        if {h["message_id"] for h in hits["hits"]} & probe.sources:
                            tally["search"] += 1
                        elif len(misses) < 40:
                            misses.append({"kind": probe.kind, "probe": probe.query[:120]})
    report: dict[str, Any] = {"policy": repr(policy), "sessions": sessions, "kinds": {}}

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    all_probes = sum(t["probes"] for t in totals.values())
    for kind, t in totals.items():
        rest = t["probes"] - t["summary"]
        report["kinds"][kind] = {
            **t,
            "summary_share": share(t["summary"], t["probes"]),
            "search_recall_at_5_of_rest": share(t["search"], rest),
            "answered_share": share(t["summary"] + t["search"], t["probes"]),
        }
    answered = sum(t["summary"] + t["search"] for t in totals.values())
    in_summary = sum(t["summary"] for t in totals.values())
    report["all"] = {
        "probes": all_probes,
        "summary_share": share(in_summary, all_probes),
        "search_recall_at_5_of_rest": share(answered - in_summary, all_probes - in_summary),
        "answered_share": share(answered, all_probes),
    }

    def at_least(value: float | None, floor: float) -> bool | str:
        return "no probes" if value is None else value >= floor

    checks = {
        "summary + search >= 95% of probes": at_least(report["all"]["answered_share"], 0.95),
        "files named in the summary >= 90%": at_least(
            report["kinds"]["file"]["summary_share"], 0.90
        ),
        "requests named in the summary >= 90%": at_least(
            report["kinds"]["request"]["summary_share"], 0.90
        ),
    }
    # A floor with no probes (no folded region touches a file) is reported as such, not met.
    report["floors"] = {"all_met": all(v is not False for v in checks.values()), "checks": checks}
    report["misses_sampled"] = misses
    return report


def whole_sessions(policy: FoldPolicy) -> dict[str, Any]:
    """Each whole session summarized as if it were one folded region (a session of one user
    request never folds, so the files its tools touched are never in a folded region): the
    share of its probes the summary names."""
    totals = {k: [0, 0] for k in ("file", "command", "error", "request")}
    for path in sorted((TRANSCRIPTS / FOLDER).glob("*.jsonl")):
        (item,) = load_log(str(path))
        messages = [{**m, "id": m.get("id") or f"m{i}"} for i, m in enumerate(item.messages, 1)]
        messages = repair_pairing(messages)[0]
        summary = OfflineSummarizer()(None, messages, max_chars=policy.max_summary_chars)
        for probe in probes(messages):
            totals[probe.kind][0] += 1
            totals[probe.kind][1] += named(probe, summary)
    return {
        kind: {"probes": n, "summary": k, "summary_share": round(k / n, 4) if n else None}
        for kind, (n, k) in totals.items()
    }


def main() -> None:
    started = time.perf_counter()
    load_before = os.getloadavg()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench_fold_recall_") as tmp:
        # The default, and a threshold low enough to fold every session (more regions).
        out["default_policy"] = measure(FoldPolicy(), tmp)
        out["threshold_30000"] = measure(FoldPolicy(threshold_chars=30_000), tmp)
    out["whole_sessions_summarized"] = whole_sessions(FoldPolicy())
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["load_before_after"] = [list(load_before), list(os.getloadavg())]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
