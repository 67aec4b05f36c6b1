"""`leanreplay proxy` on the shared Claude Code sessions: billed input through the proxy and
directly, and the latency the proxy adds.

**Bill.** Each session of ``../shared/transcripts/claude-code-m-claude`` is replayed the way
Claude Code sends it: one request before each assistant message, holding every message before
it (the log made valid, as bench_cost does), with Claude Code's metadata (its session id) and a
breakpoint on the last block. The same requests go to a fake upstream directly and through the
proxy (a `leanreplay proxy` process on a fresh home, default policy). The upstream bills like
Anthropic with a warm cache, per conversation: the longest common prefix with the previous
request's prompt is read at 0.1x, the rest written at 1.25x; the prompt is the tools, the system
prompt and the messages as JSON, breakpoints left out (they mark the prompt, they are not in it);
tokens are chars / 4. The requests are held fixed: the client sends the recorded history
whatever the proxy did, so re-reads the elisions might cause are not counted (a re-read costs one
``conversation_read`` round). The system prompt and the client's tools are short and the same
both ways; the proxy's two retrieval tools count against it.

**Latency.** Conversations of about 10,000 and 200,000 chars grow by one exchange per request;
each request goes to the upstream directly and through the proxy, interleaved, JSON and
streamed (time to the first byte). The upstream answers at once; the added latency is the
difference per pair, p50 and p99.

    python bench/bench_proxy.py      # prints JSON; floors: billed >= 20% below direct, p50 < 5 ms
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2

from bench._billing import CHARS_PER_TOKEN, WRITE_5M, prefix_bill
from leanreplay.index import load_log
from leanreplay.placeholders import ReplayPolicy, for_provider, repair_pairing, replay
from tests.proxy.upstream import FakeUpstream, Recorded, answer

TRANSCRIPTS = Path(__file__).resolve().parent.parent.parent / "shared" / "transcripts"
SESSIONS = TRANSCRIPTS / "claude-code-m-claude"
SYSTEM = [
    {
        "type": "text",
        "text": "You are Claude Code, a coding agent.",
        "cache_control": {"type": "ephemeral"},
    }
]
TOOLS = [
    {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object"}}
    for name in ("Bash", "Read", "Write", "Edit", "Glob", "Grep")
]
FLOOR_SAVED = 0.20
# The thinking Anthropic does not bill: that of the turns before the current exchange.
STRIP_THINKING = ReplayPolicy(
    min_chars=10**9, elide_inputs=False, drop_thinking=True, timing="eager"
)
FLOOR_P50_MS = 5.0
SAMPLES = 40


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _without_earlier_thinking(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as Anthropic bills them: it strips the thinking blocks of the assistant
    turns before the current exchange from the context itself."""
    numbered = [{**m, "id": f"x{i}"} for i, m in enumerate(messages)]
    kept = replay(numbered, conversation_id="bill", policy=STRIP_THINKING).messages
    return [{k: v for k, v in m.items() if k != "id"} for m in kept]


class Biller:
    """The fake upstream's meter: per conversation (the ``x-bench-bill`` header), a warm
    cache; billed twice, as Anthropic bills (earlier thinking stripped) and every block."""

    def __init__(self) -> None:
        self.previous: dict[tuple[str, str], str] = {}
        self.totals: dict[str, dict[str, float]] = {}

    def __call__(self, recorded: Recorded) -> Any:
        key = recorded.headers.get("x-bench-bill")
        if key:
            body = recorded.json
            messages = body.get("messages") or []
            for meter, shown in (
                ("anthropic", _without_earlier_thinking(messages)),
                ("every_block", messages),
            ):
                self._bill(key, meter, [body.get("tools"), body.get("system"), shown])
        return answer("ok")

    def _bill(self, key: str, meter: str, parts: list[Any]) -> None:
        prompt = json.dumps(_strip(parts), ensure_ascii=False, separators=(",", ":"))
        side, _ = key.split(":", 1)
        bill = prefix_bill(self.previous.get((meter, key), ""), prompt)
        self.previous[(meter, key)] = prompt
        total = self.totals.setdefault(
            f"{meter}:{side}", {"billed": 0.0, "uncached": 0.0, "peak": 0.0, "requests": 0}
        )
        tokens = len(prompt) / CHARS_PER_TOKEN
        total["billed"] += bill.billed(WRITE_5M)
        total["uncached"] += tokens
        total["peak"] = max(total["peak"], tokens)
        total["requests"] += 1


def sessions() -> list[tuple[str, list[dict[str, Any]]]]:
    out = []
    for path in sorted(SESSIONS.glob("*.jsonl")):
        for item in load_log(str(path)):
            messages = [{**m, "id": m.get("id") or f"m{i}"} for i, m in enumerate(item.messages, 1)]
            repaired = for_provider(repair_pairing(messages)[0], "anthropic")
            for message in repaired:  # Claude Code sends content as blocks, always
                if isinstance(message["content"], str):
                    message["content"] = [{"type": "text", "text": message["content"]}]
            out.append((item.conversation_id, repaired))
    return out


def requests(session: str, messages: list[dict[str, Any]]) -> Iterator[bytes]:
    """Claude Code's requests of one session: before each assistant message, its history."""
    metadata = {
        "user_id": json.dumps({"device_id": "d", "account_uuid": "", "session_id": session})
    }
    for i, message in enumerate(messages):
        if message["role"] != "assistant" or i == 0:
            continue
        history = json.loads(json.dumps(messages[:i]))
        last = history[-1]
        if last["content"] and isinstance(last["content"][-1], dict):
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        body = {
            "model": "claude-bench",
            "max_tokens": 32000,
            "messages": history,
            "system": SYSTEM,
            "tools": TOOLS,
            "metadata": metadata,
        }
        yield json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def start_proxy(upstream: str, home: str) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "leanreplay.index.cli", "--home", home, "proxy"]
    command += ["--upstream", upstream, "--port", "0"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.match(r"leanreplay proxy on (\S+) ->", line)
    if not found:
        process.kill()
        raise RuntimeError(f"the proxy did not start: {line!r}")
    return process, found.group(1)


def bill(upstream: FakeUpstream, proxy_url: str) -> dict[str, Any]:
    biller = Biller()
    upstream.default = biller
    started = time.perf_counter()
    count = 0
    with httpx2.Client(timeout=120) as client:
        for session, messages in sessions():
            for body in requests(session, messages):
                for side, url in (("direct", upstream.url), ("proxy", proxy_url)):
                    headers = {"x-api-key": "k", "x-bench-bill": f"{side}:{session}"}
                    response = client.post(f"{url}/v1/messages", content=body, headers=headers)
                    response.raise_for_status()
                count += 1
                upstream.requests.clear()  # the upstream keeps no copies: the bench runs long
    out: dict[str, Any] = {
        "sessions": len({s for s, _ in sessions()}),
        "requests": count,
        "seconds": round(time.perf_counter() - started, 1),
    }
    for meter in ("anthropic", "every_block"):
        direct, proxy = biller.totals[f"{meter}:direct"], biller.totals[f"{meter}:proxy"]
        saved = 1 - proxy["billed"] / direct["billed"]
        out[meter] = {
            "direct": {k: round(v) for k, v in direct.items()},
            "proxy": {k: round(v) for k, v in proxy.items()},
            "billed_saved": round(saved, 4),
            "uncached_saved": round(1 - proxy["uncached"] / direct["uncached"], 4),
            "peak_ratio": round(proxy["peak"] / direct["peak"], 4),
        }
    saved = out["anthropic"]["billed_saved"]
    out["floor_billed_saved"] = FLOOR_SAVED
    out["floor_met"] = saved >= FLOOR_SAVED
    return out


def synthetic(size: int) -> list[dict[str, Any]]:
    """A conversation of about ``size`` chars in tool results, ending with a user turn."""
    chunk = "x" * 180 + "\n"
    out: list[dict[str, Any]] = []
    n = 0
    while sum(len(json.dumps(m)) for m in out) < size:
        out.append({"role": "user", "content": f"step {n}"})
        out.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"n": n}}],
            }
        )
        out.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": chunk * 10}],
            }
        )
        out.append({"role": "assistant", "content": f"done {n}"})
        n += 1
    out.append({"role": "user", "content": "next"})
    return out


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of a process so far (Linux), which the machine's load does
    not inflate the way it does wall time."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latency(upstream: FakeUpstream, proxy_url: str, pid: int) -> dict[str, Any]:
    upstream.default = answer("ok")
    out: dict[str, Any] = {}
    with httpx2.Client(timeout=60) as client:
        for size in (10_000, 200_000):
            for stream in (False, True):
                history = synthetic(size)
                added: list[float] = []
                direct_ms: list[float] = []
                cpu_before = None
                for n in range(SAMPLES + 5):
                    if n == 5:
                        cpu_before = cpu_seconds(pid)
                    history = [
                        *history,
                        {"role": "assistant", "content": f"reply {n}"},
                        {"role": "user", "content": f"more {n}"},
                    ]
                    text = json.dumps(
                        {
                            "model": "m",
                            "max_tokens": 64,
                            "stream": stream,
                            "messages": history,
                            "tools": TOOLS,
                        }
                    )
                    times = {}
                    for side, url in (("direct", upstream.url), ("proxy", proxy_url)):
                        start = time.perf_counter()
                        with client.stream(
                            "POST",
                            f"{url}/v1/messages",
                            content=text,
                            headers={"x-api-key": "k", FAMILY: f"lat-{size}-{stream}"},
                        ) as response:
                            chunks = response.iter_raw()
                            next(chunks)
                            times[side] = time.perf_counter() - start
                            for _ in chunks:
                                pass
                    upstream.requests.clear()
                    if n >= 5:  # the first ones warm up connections and caches
                        added.append((times["proxy"] - times["direct"]) * 1000)
                        direct_ms.append(times["direct"] * 1000)
                added.sort()
                cpu_after = cpu_seconds(pid)
                cpu = (
                    round((cpu_after - cpu_before) / SAMPLES * 1000, 2)
                    if cpu_before is not None and cpu_after is not None
                    else None
                )
                out[f"{size // 1000}k_{'stream_ttfb' if stream else 'json'}"] = {
                    "chars": len(text),
                    "proxy_cpu_ms_per_request": cpu,
                    "added_ms_p50": round(statistics.median(added), 2),
                    "added_ms_p99": round(added[int(0.99 * (len(added) - 1))], 2),
                    "direct_ms_p50": round(statistics.median(direct_ms), 2),
                }
    p50 = out["200k_json"]["added_ms_p50"]
    out["floor_p50_ms_at_200k"] = FLOOR_P50_MS
    out["floor_met"] = p50 < FLOOR_P50_MS
    return out


FAMILY = "x-leanreplay-conversation"


def main() -> None:
    if not SESSIONS.is_dir():
        sys.exit(f"needs the shared transcripts at {SESSIONS}")
    result: dict[str, Any] = {"load_before": os.getloadavg()}
    with FakeUpstream() as upstream, tempfile.TemporaryDirectory() as home:
        process, url = start_proxy(upstream.url, home)
        try:
            result["bill"] = bill(upstream, url)
            result["latency"] = latency(upstream, url, process.pid)
        finally:
            process.terminate()
            process.wait(10)
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
