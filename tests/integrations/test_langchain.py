"""The LangChain integration with the real packages: create_agent with a scripted chat model
(LangChain's own BaseChatModel, no network) and one LangGraph graph with the hook."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pydantic import Field

from leanreplay import ReplayPolicy, Workspace, check_pairing, parse_read_call
from leanreplay.index import InvalidArgumentError
from leanreplay.integrations.langchain import (
    LeanReplayMiddleware,
    lean_pre_model_hook,
    lean_tools,
)
from leanreplay.placeholders import PLACEHOLDER_MARKER
from tests.conftest import SAMPLES
from tests.integrations.agents_model import log_output

EAGER = ReplayPolicy(timing="eager")


@tool
def logs(n: int) -> str:
    """Return the log of run n."""
    return log_output(n)


def placeholders_in(messages: list[BaseMessage]) -> list[str]:
    return [
        m.content
        for m in messages
        if isinstance(m, ToolMessage)
        and isinstance(m.content, str)
        and m.content.startswith(PLACEHOLDER_MARKER)
        and '"logs"' in m.content[:60]
    ]


class ScriptedChat(BaseChatModel):
    """Calls `logs` ``calls_per_turn`` times a turn, follows each placeholder once with the
    conversation_read it names, then answers; records every input it gets."""

    calls_per_turn: int = 3
    inputs: list[list[BaseMessage]] = Field(default_factory=list)
    followed: set[str] = Field(default_factory=set)
    n: int = 0
    in_turn: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.inputs.append(list(messages))
        self.n += 1
        if isinstance(messages[-1], HumanMessage):
            self.in_turn = 0
        pending = [p for p in placeholders_in(messages) if p not in self.followed]
        if pending:
            self.followed.add(pending[0])
            call = {"name": "conversation_read", "args": parse_read_call(pending[0])}
        elif self.in_turn < self.calls_per_turn:
            self.in_turn += 1
            call = {"name": "logs", "args": {"n": self.n}}
        else:
            message = AIMessage(content=f"answer {self.n}")
            return ChatResult(generations=[ChatGeneration(message=message)])
        message = AIMessage(content="", tool_calls=[{**call, "id": f"call_{self.n}"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def check_inputs(model: ScriptedChat) -> None:
    for messages in model.inputs:
        assert all(isinstance(m, BaseMessage) for m in messages)
        assert check_pairing(convert_to_openai_messages(messages)) == []  # type: ignore[arg-type]


def read_backs(model: ScriptedChat) -> int:
    """Every conversation_read result the model got is the elided log, byte-exact."""
    seen: set[str] = set()
    for messages in model.inputs:
        for m in messages:
            if isinstance(m, ToolMessage) and m.name == "conversation_read":
                if str(m.content).startswith("[elided"):
                    continue  # the read-back's own result, aged in its turn
                page = json.loads(m.content)  # type: ignore[arg-type]
                n = int(page["content"].split(" run ")[1].split(" ")[0])
                assert page["content"] == log_output(n)
                seen.add(m.tool_call_id)
    return len(seen)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "home", roots=[SAMPLES])


def test_create_agent_runs_stay_lean_and_originals_come_back(ws: Workspace) -> None:
    model = ScriptedChat(calls_per_turn=3)
    lean = LeanReplayMiddleware(ws, conversation_id="chat", policy=EAGER)
    agent = create_agent(model, [logs], middleware=[lean])
    state: dict[str, Any] = {"messages": []}
    for question in ["What failed?", "And then?", "Summarize."]:
        state = agent.invoke({"messages": [*state["messages"], HumanMessage(question)]})
    check_inputs(model)
    assert placeholders_in(model.inputs[-1])
    assert read_backs(model) >= 3
    # The agent's state is untouched: its tool messages hold the logs themselves.
    outputs = [m.content for m in state["messages"] if isinstance(m, ToolMessage)]
    assert all(not str(o).startswith("[elided") for o in outputs)
    # Every message is stored (the last answer too), as LangChain's OpenAI form, with its id.
    stored = ws.messages("chat")
    assert [m["id"] for m in stored] == [m.id for m in state["messages"]]
    assert stored[-1]["content"] == state["messages"][-1].content
    logs_stored = [m["content"] for m in stored if m["role"] == "tool" and "run " in m["content"]]
    assert [o for o in outputs if o in logs_stored] == logs_stored
    # Messages the replay left alone are the state's own objects; changed ones are copies.
    last = model.inputs[-1]
    ids = {m.id: m for m in state["messages"]}
    untouched = [m for m in last if ids.get(m.id) is m]
    assert len(untouched) > len(last) / 2
    for m in last:
        if m.id in ids and ids[m.id] is not m:
            assert type(m) is type(ids[m.id])
            assert isinstance(m, ToolMessage)
            assert m.tool_call_id == ids[m.id].tool_call_id  # type: ignore[attr-defined]


def test_a_long_create_agent_run_stays_lean(ws: Workspace) -> None:
    lean_model = ScriptedChat(calls_per_turn=12)
    lean = LeanReplayMiddleware(ws, conversation_id="long", policy=EAGER)
    create_agent(lean_model, [logs], middleware=[lean]).invoke(
        {"messages": [HumanMessage("Read every log.")]}, {"recursion_limit": 100}
    )
    check_inputs(lean_model)
    sizes = [sum(len(str(m.content)) for m in messages) for messages in lean_model.inputs]
    full = sum(len(log_output(n)) for n in range(12))
    assert max(sizes) < full / 2
    assert read_backs(lean_model) == 12


def test_the_langgraph_hook_feeds_the_model_the_lean_replay(ws: Workspace) -> None:
    with warnings.catch_warnings():
        # create_react_agent is LangGraph's graph with a pre_model_hook (deprecated in favour
        # of langchain's create_agent, which takes the middleware instead).
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        model = ScriptedChat(calls_per_turn=6)
        hook = lean_pre_model_hook(ws, "graph", policy=EAGER)
        graph = create_react_agent(model, [logs, *lean_tools(ws)], pre_model_hook=hook)
    state = graph.invoke({"messages": [HumanMessage("Read the logs.")]}, {"recursion_limit": 60})
    check_inputs(model)
    assert placeholders_in(model.inputs[-1])
    assert read_backs(model) >= 3
    assert all(not str(m.content).startswith("[elided") for m in state["messages"])
    assert [m["id"] for m in ws.messages("graph")] == [m.id for m in state["messages"][:-1]]


def test_tools_have_leanreplays_schemas_and_errors(ws: Workspace) -> None:
    tools = {t.name: t for t in lean_tools(ws)}
    assert "conversation_read" in tools
    assert "tool_search" not in tools
    pages = json.loads(tools["pdf_info"].invoke({"path": "classic_xref.pdf"}))
    assert pages["facts"]["pages"] == 12
    call = {"name": "conversation_read", "id": "c1", "type": "tool_call"}
    error = tools["conversation_read"].invoke(
        {**call, "args": {"conversation_id": "nope", "message_id": "m1"}}
    )
    assert error.status == "error"
    assert error.content.startswith("no conversation 'nope'")
    image = tools["image_view"].invoke({"path": "red_64x48.png"})
    assert image[1]["type"] == "image"
    assert image[1]["mime_type"] == "image/png"
    with pytest.raises(InvalidArgumentError, match="policy must be a ReplayPolicy"):
        LeanReplayMiddleware(ws, conversation_id="c", policy=3)  # type: ignore[arg-type]


def test_the_middleware_works_in_async_agents(ws: Workspace) -> None:
    model = ScriptedChat(calls_per_turn=6)
    lean = LeanReplayMiddleware(ws, conversation_id="async", policy=EAGER)
    agent = create_agent(model, [logs], middleware=[lean])
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage("Go.")]}, {"recursion_limit": 60}))
    check_inputs(model)
    assert placeholders_in(model.inputs[-1])
    assert read_backs(model) >= 3
    assert [m["id"] for m in ws.messages("async")] == [m.id for m in state["messages"]]
