"""Request sizes of one long agent run with and without the framework integrations.

One user question, then RUN_CALLS tool calls whose outputs are ~4,900-char logs, driven by a
scripted model through the real frameworks: the OpenAI Agents SDK (Runner.run, with and
without `lean_input_filter`) and LangChain (`create_agent`, with and without
`LeanReplayMiddleware`). A request's size is the JSON of what the model received (the SDK's
input items; LangChain's messages as OpenAI messages). Prints JSON: the sizes of every
request, the largest and the sum, under the default policy and the eager one, CPU seconds and
the load average.

    python bench/bench_integrations.py
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import Agent, RunConfig, Runner
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, convert_to_openai_messages

from leanreplay import ReplayPolicy, Workspace
from leanreplay.integrations.langchain import LeanReplayMiddleware
from leanreplay.integrations.openai_agents import lean_input_filter, lean_tools
from tests.integrations.agents_model import ScriptedModel, logs
from tests.integrations.test_langchain import ScriptedChat
from tests.integrations.test_langchain import logs as lc_logs

RUN_CALLS = 40  # tool calls in the one long run
POLICIES = {"default": None, "eager": ReplayPolicy(timing="eager")}


class _Everything(set[str]):
    def __contains__(self, item: object) -> bool:
        return True


def summary(sizes: list[int]) -> dict[str, Any]:
    return {"requests": len(sizes), "max": max(sizes), "sum": sum(sizes), "sizes": sizes}


def agents_run(home: str, policy: ReplayPolicy | None, lean: bool) -> list[int]:
    ws = Workspace(home)
    model = ScriptedModel(calls_per_turn=RUN_CALLS, read_back=False)
    agent = Agent(name="bench", model=model, tools=[logs, *lean_tools(ws)])
    kwargs: dict[str, Any] = {"tracing_disabled": True}
    if lean:
        kwargs["call_model_input_filter"] = lean_input_filter(ws, "run", policy=policy)
    asyncio.run(Runner.run(agent, "Read every log.", run_config=RunConfig(**kwargs), max_turns=200))
    ws.close()
    return [len(json.dumps(items)) for items in model.inputs]


def langchain_run(home: str, policy: ReplayPolicy | None, lean: bool) -> list[int]:
    ws = Workspace(home)
    model = ScriptedChat(calls_per_turn=RUN_CALLS)
    model.followed = _Everything()  # no read-backs: the same requests with and without
    middleware = [LeanReplayMiddleware(ws, conversation_id="run", policy=policy)] if lean else []
    agent = create_agent(model, [lc_logs], middleware=middleware)
    agent.invoke({"messages": [HumanMessage("Read every log.")]}, {"recursion_limit": 400})
    ws.close()
    return [len(json.dumps(convert_to_openai_messages(m))) for m in model.inputs]


def main() -> None:
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    out: dict[str, Any] = {"run_calls": RUN_CALLS}
    for name, run in (("openai_agents", agents_run), ("langchain", langchain_run)):
        with tempfile.TemporaryDirectory() as home:
            full = run(os.path.join(home, "full"), None, lean=False)
        result: dict[str, Any] = {"without": summary(full)}
        for label, policy in POLICIES.items():
            with tempfile.TemporaryDirectory() as home:
                lean = run(home, policy, lean=True)
            result[label] = {
                **summary(lean),
                "max_ratio": round(max(full) / max(lean), 2),
                "sum_ratio": round(sum(full) / sum(lean), 2),
            }
        out[name] = result
    used = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_seconds"] = round(used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime, 2)
    out["wall_seconds"] = round(time.perf_counter() - start, 2)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
