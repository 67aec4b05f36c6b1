"""What replay costs in billed input tokens, billed like the provider, on ../shared/transcripts.

One request before each assistant message of a log, holding every message before it; each
strategy transforms that request and `for_provider` serializes it as the provider's body
(compact JSON, ``{"messages": [...]}``). Three bills side by side (bench/_billing.py holds
the billing and the re-read detector, unit-tested in tests/test_bench_billing.py):

- ``unit``: a warm cache that never expires. Per request, the longest prefix shared with the
  previous body is read at 0.1x, the rest written at 1.25x.
- ``ttl``: a per-conversation prompt cache with a TTL (5 minutes by default, ``--ttl 3600``
  writes at 2x), driven by the logs' own timestamps (Claude Code records, mini-swe-agent's
  per-message times; tau-bench has none, so nothing expires there). A read refreshes a
  cached prefix; a request after a longer gap writes everything again. Requests under
  1,024 tokens (the minimum cacheable prompt of Claude's Opus and Sonnet models) are billed
  uncached. Thinking is billed as Anthropic bills it: Opus 4.5 keeps earlier turns' thinking
  in the prompt, Sonnet 4.5 and Haiku 4.5 strip the thinking of turns before the last user
  message (the model of each Claude Code request is the one its log names).
- ``adjusted``: the TTL bill plus the re-reads a strategy causes: when the model's next
  message uses a distinctive token found only in text the strategy left out, or calls a tool
  on the same path or command as an earlier call whose result was left out, one
  ``conversation_read`` round trip (the call and the original, one 40,000-char page) is
  inserted into the session before it, billed as a request, and carried from then on.

Strategies: ``none``; ``default`` (as a user gets it: `Workspace.ingest` folds with the
default `FoldPolicy` and the offline summarizer, then `ReplayPolicy()` replays);
``default_no_fold``; ``seed`` (`ReplayPolicy.seed()`); and the peers, emulated from their
sources: Anthropic context editing (``clear_tool_uses_20250919`` defaults, with and without
``clear_tool_inputs``), SWE-agent ``LastNObservations(n=5, polling=5)``, OpenHands
``ObservationMaskingCondenser`` (attention window 100 events), LangChain ``ClearToolUsesEdit``
defaults and the OpenAI Agents SDK ``ToolOutputTrimmer`` defaults. Tokens are chars / 4.

    python bench/bench_cost.py               # the table and the floors (JSON)
    python bench/bench_cost.py --ttl 3600    # the 1-hour cache
    python bench/bench_cost.py --sweep       # also the default's knobs, on the adjusted bill
    python bench/bench_cost.py --strategies none --points fresh_cap_chars=20_000,default
                                             # only those sweep points (and the baseline)
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._billing import (
    CHARS_PER_TOKEN,
    READ,
    WRITE_5M,
    Bill,
    PromptCache,
    RereadDetector,
    ThinkingAsBilled,
    body_chars,
    reread_round_trip,
    write_price,
)
from leanreplay.index import load_log
from leanreplay.index.lifecycle._fold import _fold_step, lean_replay
from leanreplay.index.store._store import FoldRecord
from leanreplay.placeholders import (
    FoldPolicy,
    OfflineSummarizer,
    ReplayPolicy,
    content_chars,
    for_provider,
    is_genuine_user,
    repair_pairing,
    replay,
    result_slots,
    tool_calls,
)

TRANSCRIPTS = Path(__file__).resolve().parent.parent.parent / "shared" / "transcripts"
CORPORA = {
    "claude-code": ("claude-code-m-claude", "anthropic"),
    "mini-swe-agent": ("mini-swe-agent-pr816", "openai"),
    "tau-bench": ("tau-bench", "openai"),
}
MIN_CACHEABLE_TOKENS = 1024
MAX_REREADS_PER_REQUEST = 8  # round trips before one logged message, at most
CONTEXT_EDITING_TRIGGER = 100_000  # input tokens
CONTEXT_EDITING_KEEP = 3  # tool uses
CLEARED = "[cleared]"  # LangChain's placeholder; Anthropic does not document its bytes
SWE_AGENT_N, SWE_AGENT_POLLING = 5, 5
OPENHANDS_WINDOW = 100  # ObservationMaskingCondenserConfig.attention_window default
TRIMMER_RECENT, TRIMMER_MAX, TRIMMER_PREVIEW = 2, 500, 200  # ToolOutputTrimmer defaults

Messages = list[dict[str, Any]]


@dataclass
class Conversation:
    cid: str
    messages: Messages
    times: list[float | None]  # seconds, per message (None: the log has no clock)
    models: list[str | None]  # the model that wrote each assistant message


def _claude_raw(path: Path) -> dict[str, tuple[float | None, str | None]]:
    out: dict[str, tuple[float | None, str | None]] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("uuid"), str):
            continue
        stamp = record.get("timestamp")
        at = None
        if isinstance(stamp, str):
            try:
                at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
            except ValueError:
                at = None
        message = record.get("message")
        model = message.get("model") if isinstance(message, dict) else None
        out[record["uuid"]] = (at, model if isinstance(model, str) else None)
    return out


def _mini_time(message: Mapping[str, Any]) -> float | None:
    extra = message.get("extra")
    if not isinstance(extra, Mapping):
        return None
    stamp = extra.get("timestamp")
    if isinstance(stamp, (int, float)):
        return float(stamp)
    response = extra.get("response")
    created = response.get("created") if isinstance(response, Mapping) else None
    return float(created) if isinstance(created, (int, float)) else None


def conversations(folder: str) -> list[Conversation]:
    files = sorted(p for p in (TRANSCRIPTS / folder).rglob("*") if p.suffix in (".json", ".jsonl"))
    out = []
    for path in files:
        raw = _claude_raw(path) if path.suffix == ".jsonl" else {}
        for item in load_log(str(path)):
            messages = [{**m, "id": m.get("id") or f"m{i}"} for i, m in enumerate(item.messages, 1)]
            # What an agent loop sends: the log made valid (split records joined, stubs added).
            messages = repair_pairing(messages)[0]
            times: list[float | None] = []
            models: list[str | None] = []
            for m in messages:
                ids = m.get("block_ids") or [m.get("id")]
                info = [raw[i] for i in ids if i in raw]
                stamps = [t for t, _ in info if t is not None]
                times.append(max(stamps) if stamps else _mini_time(m))
                models.append(next((mo for _, mo in info if mo), None))
            out.append(Conversation(item.conversation_id, messages, times, models))
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


def _slots(messages: Sequence[Mapping[str, Any]]) -> list[tuple[int, int | None, str, str]]:
    """(message index, block, call id, text) of every tool result, oldest first."""
    return [
        (i, slot.block, slot.tool_call_id, slot.text())
        for i, m in enumerate(messages)
        for slot in result_slots(m)
    ]


def _replace(
    messages: Sequence[Mapping[str, Any]],
    results: dict[tuple[int, int | None], str],
    inputs: set[str] | None = None,
) -> list[Mapping[str, Any]]:
    """A copy with those results replaced and the tool inputs of those call ids emptied."""
    out = list(messages)
    for (i, block), text in results.items():
        out[i] = _with_result(out[i], block, text)
    if inputs:
        for i, m in enumerate(out):
            if m.get("role") != "assistant" or not set(dict(tool_calls(m))) & inputs:
                continue
            copy = dict(m)
            if isinstance(copy.get("tool_calls"), list):
                copy["tool_calls"] = [
                    {**c, "function": {**c["function"], "arguments": "{}"}}
                    if c.get("id") in inputs
                    else c
                    for c in copy["tool_calls"]
                ]
            if isinstance(copy.get("content"), list):
                copy["content"] = [
                    {**b, "input": {}}
                    if isinstance(b, Mapping)
                    and b.get("type") == "tool_use"
                    and b.get("id") in inputs
                    else b
                    for b in copy["content"]
                ]
            out[i] = copy
    return out


def clear_tool_uses(
    messages: Messages, tokens: float, *, clear_inputs: bool
) -> list[Mapping[str, Any]]:
    """``clear_tool_uses_20250919`` / LangChain ``ClearToolUsesEdit`` defaults: over 100k
    input tokens, every tool result but the 3 most recent is cleared (and, with
    ``clear_tool_inputs``, its call's input emptied); applied to each request's full
    history, as both do."""
    if tokens <= CONTEXT_EDITING_TRIGGER:
        return messages
    slots = _slots(messages)
    stale = slots[: max(0, len(slots) - CONTEXT_EDITING_KEEP)]
    inputs = {c for _, _, c, _ in stale} if clear_inputs else None
    return _replace(messages, {(i, b): CLEARED for i, b, _, _ in stale}, inputs)


def swe_agent(messages: Messages) -> list[Mapping[str, Any]]:
    """SWE-agent ``LastNObservations(n=5, polling=5)``: the task (its first observation) and
    the last 5 to 10 tool results stay; the cut moves every 5 observations."""
    slots = _slots(messages)
    observations = len(slots) + 1  # the instance template counts as the first
    cut = max(0, (observations // SWE_AGENT_POLLING) * SWE_AGENT_POLLING - SWE_AGENT_N)
    stale = slots[: max(0, cut - 1)]
    targets = {}
    for i, b, _, text in stale:
        targets[(i, b)] = f"Old environment output: ({len(text.splitlines())} lines omitted)"
    return _replace(messages, targets)


def openhands(messages: Messages) -> list[Mapping[str, Any]]:
    """OpenHands ``ObservationMaskingCondenser``: observations outside the last 100 events
    (messages here) become ``<MASKED>``."""
    edge = len(messages) - OPENHANDS_WINDOW
    stale = [(i, b) for i, b, _, _ in _slots(messages) if i < edge]
    return _replace(messages, dict.fromkeys(stale, "<MASKED>"))


def agents_sdk(messages: Messages) -> list[Mapping[str, Any]]:
    """Agents SDK ``ToolOutputTrimmer()``: before the 2nd-last user message, tool outputs over
    500 chars become a 200-char preview."""
    users = [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "user" and not (result_slots(m) and not _has_text(m))
    ]
    if len(users) < TRIMMER_RECENT:
        return messages
    boundary = users[-TRIMMER_RECENT]
    names: dict[str, str] = {}
    for m in messages:
        names.update(tool_calls(m))
    targets = {}
    for i, b, call_id, text in _slots(messages):
        if i < boundary and len(text) > TRIMMER_MAX:
            name = names.get(call_id) or "unknown_tool"
            targets[(i, b)] = (
                f"[Trimmed: {name} output \u2014 {len(text)} chars \u2192 "
                f"{TRIMMER_PREVIEW} char preview]\n{text[:TRIMMER_PREVIEW]}..."
            )
    return _replace(messages, targets)


def _has_text(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(
        isinstance(b, Mapping) and b.get("type") == "text" and str(b.get("text", "")).strip()
        for b in content or ()
    )


# --- one conversation, one strategy ---------------------------------------------------------


class Serializer:
    """for_provider bodies, one string per message, cached per message object."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.known: dict[int, tuple[Mapping[str, Any], str]] = {}

    def __call__(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        out = []
        for m in messages:
            known = self.known.get(id(m))
            if known is None or known[0] is not m:
                (clean,) = for_provider([m], self.provider)  # type: ignore[arg-type, list-item]
                known = (m, json.dumps(clean, ensure_ascii=False, separators=(",", ":")))
                self.known[id(m)] = known
            out.append(known[1])
        return out


class FoldSim:
    """The fold as `Workspace.append` makes it, kept up with a growing session."""

    def __init__(self, policy: FoldPolicy) -> None:
        self.policy = policy
        self.summarizer = OfflineSummarizer()
        self.fold: FoldRecord | None = None
        self.seen = 0
        self.unsummarized = 0
        self.users: list[int] = []

    def update(self, session: Messages) -> FoldRecord | None:
        policy = self.policy
        while self.seen < len(session):
            i = self.seen
            self.seen += 1
            message = session[i]
            if is_genuine_user(message):
                self.users.append(i)
            self.unsummarized += content_chars(message)
            start = self.fold.through_seq if self.fold else 0
            if self.unsummarized <= policy.threshold_chars:
                continue
            last = min(i + 1 - policy.keep_last, i)
            if not any(start < u <= last for u in self.users):
                continue
            step = _fold_step(session[: i + 1], self.fold, policy, self.summarizer)
            if isinstance(step, tuple):
                boundary, summary, _ = step
                generation = (self.fold.generation if self.fold else 0) + 1
                self.fold = FoldRecord(
                    summary, boundary, str(session[boundary - 1]["id"]), generation
                )
                self.unsummarized = sum(content_chars(m) for m in session[boundary : i + 1])
        return self.fold


@dataclass
class Context:
    cid: str
    provider: str
    serialize: Serializer
    fold: FoldSim | None = None
    times: dict[str, float] = field(default_factory=dict)  # message id -> when it was stored
    now: float | None = None  # when the request is sent

    def stored(self, message: Mapping[str, Any], at: float | None) -> None:
        if at is None:
            return
        for mid in message.get("block_ids") or [message.get("id")]:
            if isinstance(mid, str):
                self.times[mid] = at


# The policy's expiry-aware timing reads the append times (issue 24), where replay takes them.
_TIMED = "times" in inspect.signature(replay).parameters


def _clock_of(ctx: Context) -> dict[str, Any]:
    return {"times": ctx.times, "now": ctx.now} if _TIMED and ctx.times else {}


Strategy = Callable[[Messages, Context], Sequence[Mapping[str, Any]]]


def _tokens(messages: Sequence[Mapping[str, Any]], ctx: Context) -> float:
    return body_chars(ctx.serialize(messages)) / CHARS_PER_TOKEN


def _langchain_tokens(messages: Sequence[Mapping[str, Any]], ctx: Context) -> float:
    """``count_tokens_approximately``: chars / 4 of content and tool calls, +3 per message."""
    return sum(len(s) / CHARS_PER_TOKEN + 3 for s in ctx.serialize(messages))


def strategies(default: ReplayPolicy, fold: FoldPolicy | None = None) -> dict[str, Strategy]:
    fold_policy = fold or FoldPolicy()

    def ingested(m: Messages, ctx: Context) -> Any:
        if ctx.fold is None:
            ctx.fold = FoldSim(fold_policy)
        record = ctx.fold.update(m)
        return lean_replay(ctx.cid, m, {}, record, default, **_clock_of(ctx)).messages

    def policy_of(policy: ReplayPolicy) -> Strategy:
        return lambda m, ctx: (
            replay(m, conversation_id=ctx.cid, policy=policy, **_clock_of(ctx)).messages
        )

    return {
        "none": lambda m, ctx: m,
        "default": ingested,
        "default_no_fold": policy_of(default),
        "seed": policy_of(ReplayPolicy.seed()),
        "context_editing": lambda m, ctx: clear_tool_uses(m, _tokens(m, ctx), clear_inputs=False),
        "context_editing_inputs": lambda m, ctx: clear_tool_uses(
            m, _tokens(m, ctx), clear_inputs=True
        ),
        "swe_agent": lambda m, ctx: swe_agent(m),
        "openhands": lambda m, ctx: openhands(m),
        "langchain": lambda m, ctx: clear_tool_uses(
            m, _langchain_tokens(m, ctx), clear_inputs=False
        ),
        "agents_sdk": lambda m, ctx: agents_sdk(m),
    }


@dataclass
class Totals:
    billed: float = 0.0
    chars: int = 0
    peak: int = 0
    requests: int = 0
    expired: int = 0
    rereads: int = 0
    reread_chars: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, bill: Bill, price: float) -> None:
        self.billed += bill.billed(price)
        self.chars += bill.chars
        self.peak = max(self.peak, bill.chars)
        self.requests += 1
        self.expired += bill.expired

    def merge(self, other: Totals) -> None:
        self.billed += other.billed
        self.chars += other.chars
        self.peak = max(self.peak, other.peak)
        self.requests += other.requests
        self.expired += other.expired
        self.rereads += other.rereads
        self.reread_chars += other.reread_chars
        for k, v in other.reasons.items():
            self.reasons[k] = self.reasons.get(k, 0) + v


def _request_points(conv: Conversation) -> list[int]:
    """Positions k whose message is an assistant message a request produced."""
    return [
        k
        for k, m in enumerate(conv.messages)
        if k > 0 and m.get("role") == "assistant" and conv.models[k] != "<synthetic>"
    ]


def bill_fixed(
    conv: Conversation, provider: str, strategy: Strategy, ttl: float
) -> tuple[Totals, Totals]:
    """The unit and TTL bills of the requests as logged (the agent's behaviour fixed)."""
    ctx = Context(conv.cid, provider, Serializer(provider))
    unit, timed = PromptCache(ttl_s=None), PromptCache(ttl, MIN_CACHEABLE_TOKENS)
    thinking = ThinkingAsBilled()
    out_unit, out_ttl = Totals(), Totals()
    price = write_price(ttl)
    done = 0
    for k in _request_points(conv):
        history = conv.messages[:k]
        for j in range(done, k):
            ctx.stored(conv.messages[j], conv.times[j])
        done = k
        at = ctx.now = _clock(conv.times[:k])
        sent = strategy(history, ctx)
        out_unit.add(unit.request(ctx.serialize(sent), None), WRITE_5M)
        billed = thinking(sent, conv.models[k]) if provider == "anthropic" else sent
        out_ttl.add(timed.request(ctx.serialize(billed), at), price)
    return out_unit, out_ttl


def bill_adjusted(conv: Conversation, provider: str, strategy: Strategy, ttl: float) -> Totals:
    """The TTL bill with each re-read inserted into the session as a round trip."""
    ctx = Context(conv.cid, provider, Serializer(provider))
    cache = PromptCache(ttl, MIN_CACHEABLE_TOKENS)
    thinking = ThinkingAsBilled()
    detector = RereadDetector()
    out = Totals()
    price = write_price(ttl)
    session: Messages = []
    times: list[float | None] = []
    points = set(_request_points(conv))
    n = 0
    for k, message in enumerate(conv.messages):
        if k in points:
            at = ctx.now = _clock(times)
            model = conv.models[k]
            round_trips = 0
            while True:
                sent = strategy(session, ctx)
                billed = thinking(sent, model) if provider == "anthropic" else sent
                out.add(cache.request(ctx.serialize(billed), at), price)
                rereads = detector.rereads(sent, message)
                if not rereads or round_trips >= MAX_REREADS_PER_REQUEST:
                    break
                round_trips += 1
                first = rereads[0]  # one round trip per re-read, then ask again
                n += 1
                out.rereads += 1
                out.reread_chars += min(len(first.text), 40_000)
                kind = (
                    first.reason.split(" ")[0]
                    if first.reason.startswith("token")
                    else (" ".join(first.reason.split(" ")[:2]))
                )
                out.reasons[kind] = out.reasons.get(kind, 0) + 1
                mid = str(session[first.index].get("id"))
                trip = reread_round_trip(first, provider, conv.cid, mid, n)
                session.extend(trip)
                times.extend([at] * len(trip))
                for extra in trip:
                    ctx.stored(extra, at)
                detector.read_back(first, trip)
        session.append(message)
        times.append(conv.times[k])
        ctx.stored(message, conv.times[k])
        detector.append(message)
    return out


def _clock(times: Sequence[float | None]) -> float | None:
    for t in reversed(times):
        if t is not None:
            return t
    return None


def run_corpus(
    convs: list[Conversation], provider: str, strategy: Strategy, ttl: float
) -> dict[str, Totals]:
    sums = {"unit": Totals(), "ttl": Totals(), "adjusted": Totals()}
    for conv in convs:
        unit, timed = bill_fixed(conv, provider, strategy, ttl)
        sums["unit"].merge(unit)
        sums["ttl"].merge(timed)
        sums["adjusted"].merge(bill_adjusted(conv, provider, strategy, ttl))
    return sums


def row(sums: dict[str, Totals], base: dict[str, Totals]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in ("unit", "ttl", "adjusted"):
        s, b = sums[column], base[column]
        out[column] = {
            "billed": round(s.billed),
            "vs_none": round(s.billed / b.billed - 1, 4),
            "requests": s.requests,
        }
    out["ttl"]["expired_requests"] = sums["ttl"].expired
    adjusted = sums["adjusted"]
    out["adjusted"].update(
        rereads=adjusted.rereads, reread_tokens=round(adjusted.reread_chars / CHARS_PER_TOKEN)
    )
    out["adjusted"]["reread_reasons"] = dict(sorted(adjusted.reasons.items()))
    out["peak_request_tokens"] = round(sums["unit"].peak / CHARS_PER_TOKEN)
    out["peak_vs_none"] = round(sums["unit"].peak / base["unit"].peak, 4)
    out["uncached_vs_none"] = round(sums["unit"].chars / base["unit"].chars - 1, 4)
    return out


def floors(corpora: dict[str, Any]) -> dict[str, Any]:
    def adj(corpus: str, name: str) -> float:
        return float(corpora[corpus]["strategies"][name]["adjusted"]["vs_none"])

    checks = {
        "claude-code: default adjusted <= -30%": adj("claude-code", "default") <= -0.30,
        "mini-swe-agent: default adjusted <= -12%": adj("mini-swe-agent", "default") <= -0.12,
        "tau-bench: default adjusted <= 0.0%": adj("tau-bench", "default") <= 0.0,
    }
    for corpus, data in corpora.items():
        rows = data["strategies"]
        peers = [p for p in rows if p not in ("none", "default", "default_no_fold", "seed")]
        checks[f"{corpus}: default adjusted <= every peer's"] = all(
            rows["default"]["adjusted"]["billed"] <= rows[p]["adjusted"]["billed"] for p in peers
        )
        checks[f"{corpus}: default peak <= 80% of none"] = rows["default"]["peak_vs_none"] <= 0.80
    return {"all_met": all(checks.values()), "checks": checks}


def _point(label: str) -> str:
    """A sweep label as --points compares it: ``fresh_cap_chars=20_000`` is ``...=20000``."""
    name, _, value = label.strip().partition("=")
    return f"{name}={value.replace('_', '').replace(',', '')}" if value else name


def sweep(
    data: dict[str, list[Conversation]],
    ttl: float,
    base: ReplayPolicy,
    nones: dict[str, Any],
    points: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The default's knobs, one at a time, on the three bills (the ingested default); with
    ``points``, only the variants of those labels (``default``, ``fresh_cap_chars=20_000``)."""
    variants: dict[str, ReplayPolicy] = {"default": base}
    for k in (2, 3, 4):
        if k != base.keep_assistant_turns:
            variants[f"keep_assistant_turns={k}"] = replace(base, keep_assistant_turns=k)
    for k in (1, 3):
        if k != base.keep_user_exchanges:
            variants[f"keep_user_exchanges={k}"] = replace(base, keep_user_exchanges=k)
    for chars in (1000, 4000):
        if chars != base.min_chars:
            variants[f"min_chars={chars}"] = replace(base, min_chars=chars)
    variants[f"drop_thinking={not base.drop_thinking}"] = replace(
        base, drop_thinking=not base.drop_thinking
    )
    for name, value in _new_knobs(base):
        variants[name] = value
    if points is not None:
        wanted = [_point(p) for p in points]
        unknown = [p for p in wanted if p not in {_point(label) for label in variants}]
        if unknown:
            raise SystemExit(f"no sweep point {', '.join(unknown)}; known: {', '.join(variants)}")
        variants = {k: v for k, v in variants.items() if _point(k) in wanted}
    out: dict[str, Any] = {}
    for label, policy in variants.items():
        strategy = strategies(policy)["default"]
        out[label] = {}
        for corpus, (_, provider) in CORPORA.items():
            sums = run_corpus(data[corpus], provider, strategy, ttl)
            r = row(sums, nones[corpus])
            out[label][corpus] = {
                "unit": r["unit"]["vs_none"],
                "ttl": r["ttl"]["vs_none"],
                "adjusted": r["adjusted"]["vs_none"],
                "rereads": r["adjusted"]["rereads"],
                "peak_vs_none": r["peak_vs_none"],
            }
    return out


def _new_knobs(base: ReplayPolicy) -> list[tuple[str, ReplayPolicy]]:
    """Variants of the policy fields issue 24's policy half adds, when this checkout has
    them: the cap on fresh oversized results and the preview's shape."""
    out: list[tuple[str, ReplayPolicy]] = []
    fields = getattr(base, "__dataclass_fields__", {})
    if "fresh_cap_chars" in fields:
        keep = getattr(base, "fresh_keep_chars", 0)
        caps = (10_000, 12_500, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000, 100_000, None)
        for cap in caps:
            if cap != base.fresh_cap_chars and (cap is None or cap > keep):  # type: ignore[attr-defined]
                out.append((f"fresh_cap_chars={cap}", replace(base, fresh_cap_chars=cap)))  # type: ignore[call-arg]
        cap_of = base.fresh_cap_chars  # type: ignore[attr-defined]
        for chars in (1_000, 2_000, 4_000, 8_000):
            if chars != keep and (cap_of is None or chars < cap_of):
                out.append((f"fresh_keep_chars={chars}", replace(base, fresh_keep_chars=chars)))  # type: ignore[call-arg]
    if "min_request_chars" in fields:
        for chars in (0, 10_000, 15_000, 20_000, 25_000, 30_000, 40_000):
            if chars != base.min_request_chars:  # type: ignore[attr-defined]
                label = f"min_request_chars={chars}"
                out.append((label, replace(base, min_request_chars=chars)))  # type: ignore[call-arg]
    for chars in (0, 200, 500):
        if chars != base.preview_chars:
            out.append((f"preview_chars={chars}", replace(base, preview_chars=chars)))
    if "preview_shape" in fields:
        for shape in (
            ("head",),
            ("head", "tail"),
            ("head", "errors", "paths"),
            ("head", "tail", "errors", "paths"),
        ):
            shape_of = tuple(base.preview_shape)  # type: ignore[attr-defined]
            if shape != shape_of:
                label = f"preview_shape={'+'.join(shape)}"
                out.append((label, replace(base, preview_shape=shape)))  # type: ignore[call-arg]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ttl", type=float, default=300.0, help="cache TTL in seconds")
    parser.add_argument("--sweep", action="store_true", help="also sweep the default's knobs")
    parser.add_argument(
        "--points",
        help="comma-separated sweep points to run instead of all (implies --sweep), e.g. "
        "default,fresh_cap_chars=20_000,fresh_cap_chars=None",
    )
    parser.add_argument("--only", help="one corpus (claude-code, mini-swe-agent, tau-bench)")
    parser.add_argument(
        "--strategies", help="comma-separated strategies for the table (default: all)"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    load_before = os.getloadavg()
    default = ReplayPolicy()
    if "cache_ttl_s" in getattr(default, "__dataclass_fields__", {}):
        default = replace(default, cache_ttl_s=args.ttl)  # type: ignore[call-arg]
    report: dict[str, Any] = {
        "model": {
            "requests": "one per assistant message, holding every message before it",
            "body": 'for_provider(...) as compact JSON {"messages": [...]}',
            "unit": f"warm cache, never expires: {READ} x read + {WRITE_5M} x write",
            "ttl": f"per-conversation cache, TTL {args.ttl:.0f} s from the logs' timestamps, "
            f"{READ} x read + {write_price(args.ttl)} x write; under {MIN_CACHEABLE_TOKENS} "
            "tokens uncached; thinking as Anthropic bills it",
            "adjusted": "ttl + one conversation_read round trip per re-read, inserted",
            "tokens": f"chars/{CHARS_PER_TOKEN}",
            "default_policy": repr(default),
            "fold_policy": repr(FoldPolicy()),
        },
        "corpora": {},
    }
    names = [args.only] if args.only else list(CORPORA)
    data = {corpus: conversations(CORPORA[corpus][0]) for corpus in names}
    nones: dict[str, Any] = {}
    for corpus in names:
        provider = CORPORA[corpus][1]
        convs = data[corpus]
        chosen = set(args.strategies.split(",")) | {"none"} if args.strategies else None
        sums = {
            name: run_corpus(convs, provider, s, args.ttl)
            for name, s in strategies(default).items()
            if chosen is None or name in chosen
        }
        nones[corpus] = sums["none"]
        rows = {name: row(s, sums["none"]) for name, s in sums.items()}
        rows["none"]["billed_tokens"] = {c: round(sums["none"][c].billed) for c in sums["none"]}
        report["corpora"][corpus] = {
            "conversations": len(convs),
            "requests": sums["none"]["unit"].requests,
            "strategies": rows,
        }
    if not args.only and not args.strategies:
        report["floors"] = floors(report["corpora"])
    if args.points and args.only:
        parser.error("--points sweeps all three corpora; leave out --only")
    if args.sweep or args.points:
        points = args.points.split(",") if args.points else None
        report["sweep"] = sweep(data, args.ttl, default, nones, points)
    after = resource.getrusage(resource.RUSAGE_SELF)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["cpu_seconds"] = round(after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, 1)
    report["load_before_after"] = [list(load_before), list(os.getloadavg())]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
