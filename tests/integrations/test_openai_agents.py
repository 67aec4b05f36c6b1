"""The OpenAI Agents SDK integration with the real SDK: Runner.run drives a scripted model
(the SDK's own Model interface, no network) through several runs and one long run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession
from agents.memory import Session
from agents.tool_context import ToolContext

from leanreplay import FoldPolicy, ReplayPolicy, Workspace
from leanreplay.index import TOOL_NAMES, InvalidArgumentError, tool_schemas
from leanreplay.integrations.openai_agents import (
    LeanReplaySession,
    lean_input_filter,
    lean_tools,
)
from tests.conftest import SAMPLES
from tests.integrations.agents_model import ScriptedModel, log_output, logs, placeholders_in
from tests.sdk_types import assert_valid

EAGER = ReplayPolicy(timing="eager", keep_assistant_turns=3)  # elide when stale: a fixed script


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def run_agent(agent: Agent[Any], question: str, **kwargs: Any) -> Any:
    # Runner.run_sync leaves its event loop open (a ResourceWarning): asyncio.run closes it.
    return asyncio.run(Runner.run(agent, question, **kwargs))


def agent_for(ws: Workspace, model: ScriptedModel) -> Agent[Any]:
    return Agent(name="helper", model=model, tools=[logs, *lean_tools(ws)])


def config(**kwargs: Any) -> RunConfig:
    return RunConfig(tracing_disabled=True, **kwargs)


def canonical(items: list[Any]) -> list[str]:
    return [json.dumps(i, sort_keys=True) for i in items]


def check_inputs(model: ScriptedModel) -> None:
    for items in model.inputs:
        assert_valid(items, "openai-responses")  # the SDK's item types, pairing intact


def check_read_backs(model: ScriptedModel) -> int:
    """Every conversation_read the model made returned the elided original byte-exact."""
    checked: set[str] = set()
    for items in model.inputs:
        calls = {i["call_id"]: i for i in items if i.get("type") == "function_call"}
        for item in items:
            call = calls.get(item.get("call_id"))
            if item.get("type") != "function_call_output" or call is None:
                continue
            if call["name"] != "conversation_read" or item["output"].startswith("[elided"):
                continue
            page = json.loads(item["output"])
            n = int(page["content"].split(" run ")[1].split(" ")[0])
            assert page["content"] == log_output(n)
            assert page["next"] is None
            checked.add(item["call_id"])
    return len(checked)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "home")


def test_the_session_implements_the_sdks_protocol(ws: Workspace) -> None:
    session = LeanReplaySession("chat", ws)
    assert isinstance(session, Session)
    assert session.session_settings is None
    assert session.conversation_id == "chat"


def test_several_runs_stay_lean_and_every_original_comes_back(ws: Workspace) -> None:
    model = ScriptedModel()
    session = LeanReplaySession("chat", ws, policy=EAGER)
    agent = agent_for(ws, model)
    run_config = config(call_model_input_filter=lean_input_filter(ws, session))
    for question in ["What failed?", "And then?", "Summarize."]:
        result = run_agent(agent, question, session=session, run_config=run_config)
    check_inputs(model)
    assert placeholders_in(model.inputs[-1]), "later inputs carry placeholders"
    assert check_read_backs(model) >= 2  # the model's conversation_read calls
    # The store holds every item the SDK added, as it added it: the whole three runs.
    given = result.to_input_list()  # the last run's input (the two before) and its new items
    stored = _restored(ws, "chat")
    assert len(stored) == len(given)
    assert canonical(stored[-len(result.new_items) :]) == canonical(given[-len(result.new_items) :])
    # The last input was lean: much smaller than the same items in full.
    assert len(json.dumps(model.inputs[-1])) < len(json.dumps(stored)) / 2


def _restored(ws: Workspace, cid: str) -> list[dict[str, Any]]:
    from leanreplay.integrations._items import stored_items

    return stored_items(ws, cid)


def test_a_long_run_stays_lean_inside_the_run(ws: Workspace) -> None:
    # One user question, sixteen tool calls of ~4,900 chars each. A Session alone is read only
    # between runs; the input filter keeps every model call of the run lean.
    question, turns = "Read every log.", 40
    lean_model = ScriptedModel(calls_per_turn=16, read_back=False)
    full_model = ScriptedModel(calls_per_turn=16, read_back=False)
    lean = config(call_model_input_filter=lean_input_filter(ws, "long", policy=EAGER))
    run_agent(agent_for(ws, lean_model), question, run_config=lean, max_turns=turns)
    run_agent(agent_for(ws, full_model), question, run_config=config(), max_turns=turns)
    check_inputs(lean_model)
    lean_sizes = [len(json.dumps(i)) for i in lean_model.inputs]
    full_sizes = [len(json.dumps(i)) for i in full_model.inputs]
    assert len(lean_sizes) == len(full_sizes) == 17
    assert full_sizes[-1] > 75_000
    assert lean_sizes[-1] < full_sizes[-1] / 3
    assert len(placeholders_in(lean_model.inputs[-1])) == 16 - 3  # all but the last 3 turns
    # Everything of the run is stored, the large outputs byte-exact.
    outputs = [
        i["output"] for i in _restored(ws, "long") if i.get("type") == "function_call_output"
    ]
    assert outputs == [log_output(n) for n in range(1, 17)]


def test_the_model_reads_back_elided_output_inside_a_long_run(ws: Workspace) -> None:
    model = ScriptedModel(calls_per_turn=8)
    lean = config(call_model_input_filter=lean_input_filter(ws, "reads", policy=EAGER))
    run_agent(agent_for(ws, model), "Read every log.", run_config=lean, max_turns=40)
    check_inputs(model)
    assert check_read_backs(model) == 8  # every log was elided in time, and read back once


def test_add_items_keeps_items_exactly_as_given(ws: Workspace) -> None:
    session = LeanReplaySession("exact", ws)
    items: list[Any] = [
        {"content": "hi", "role": "user"},  # no id: the store's own is never shown
        {"id": "__fake_id__", "content": [{"annotations": [], "text": "a", "type": "output_text"}],
         "role": "assistant", "status": "completed", "type": "message"},
        {"id": "__fake_id__", "content": [{"annotations": [], "text": "b", "type": "output_text"}],
         "role": "assistant", "status": "completed", "type": "message"},  # a taken id
        {"id": "ws_1", "status": "completed", "type": "web_search_call",
         "action": {"type": "search", "query": "weather"}},  # a role-less hosted tool call
        {"arguments": "{}", "call_id": "c1", "name": "f", "type": "function_call"},
        {"call_id": "c1", "output": "ok", "type": "function_call_output"},
    ]  # fmt: skip
    run(session.add_items(items))
    got = run(session.get_items())
    assert [json.dumps(i) for i in got] == [json.dumps(i) for i in items]  # keys in order too
    assert run(session.get_items(limit=2)) == items[-2:]
    assert run(session.get_items(limit=0)) == []
    with pytest.raises(InvalidArgumentError, match="limit must be >= 0, got -1"):
        run(session.get_items(limit=-1))


def test_pop_item_and_clear_session_keep_every_original(ws: Workspace) -> None:
    model = ScriptedModel(calls_per_turn=1)
    session = LeanReplaySession("undo", ws)
    agent = agent_for(ws, model)
    first = run_agent(agent, "What failed?", session=session, run_config=config())
    added = first.to_input_list()
    popped = run(session.pop_item())
    assert popped == added[-1]  # the newest item, as the SDK added it
    assert session.conversation_id == "undo#2"
    assert canonical(run(session.get_items())) == canonical(added[:-1])
    # The next run's first model input is the history without the popped item, then the question.
    run_agent(agent, "Try again.", session=session, run_config=config())
    assert canonical(model.inputs[2][:-1]) == canonical(added[:-1])
    assert model.inputs[2][-1] == {"content": "Try again.", "role": "user"}
    run(session.clear_session())
    assert session.conversation_id == "undo#3"
    assert run(session.get_items()) == []
    assert run(session.pop_item()) is None
    run_agent(agent, "Fresh start.", session=session, run_config=config())
    assert model.inputs[-2] == [{"content": "Fresh start.", "role": "user"}]
    # Nothing was deleted: the first generation still holds the popped item.
    assert canonical(_restored(ws, "undo")) == canonical(added)
    assert ws.conversations() == ["undo", "undo#2", "undo#3"]
    # Another process's session object sees the newest generation.
    assert LeanReplaySession("undo", ws).conversation_id == "undo#3"


def test_the_sdk_rewinds_items_through_pop_item(ws: Workspace) -> None:
    # The runner's own rewind (a conversation retry) pops the items it added and compares them.
    from agents.run_internal.session_persistence import rewind_session_items

    session = LeanReplaySession("rewind", ws)
    items: list[Any] = [{"content": "one", "role": "user"}, {"content": "two", "role": "user"}]
    run(session.add_items(items))
    run(rewind_session_items(session, items[1:]))
    assert run(session.get_items()) == items[:1]
    assert session.generation == 2


def test_lean_session_matches_sqlite_session_on_recent_items(ws: Workspace, tmp_path: Path) -> None:
    # The SDK's own SQLiteSession is the reference: with nothing stale, the items are the same.
    ours, theirs = LeanReplaySession("same", ws), SQLiteSession("same", str(tmp_path / "s.db"))
    for session in (ours, theirs):
        run_agent(
            agent_for(ws, ScriptedModel(calls_per_turn=1)), "Hi", session=session,
            run_config=config(),
        )  # fmt: skip
    assert canonical(run(ours.get_items())) == canonical(run(theirs.get_items()))
    theirs.close()


def invoke(tool: Any, arguments: str) -> Any:
    context = ToolContext(None, tool_name=tool.name, tool_call_id="c1", tool_arguments=arguments)
    return run(tool.on_invoke_tool(context, arguments))


def test_tools_have_leanreplays_schemas_results_and_errors(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "home", roots=[SAMPLES])
    tools = {t.name: t for t in lean_tools(ws)}
    assert list(tools) == [
        n for n in TOOL_NAMES if n not in ("tool_search", "tool_activate", "tool_call")
    ]
    openai = {s["function"]["name"]: s["function"] for s in tool_schemas("openai")}
    for name, tool in tools.items():
        assert tool.params_json_schema == openai[name]["parameters"]
        assert tool.description == openai[name]["description"]
    pages = json.loads(invoke(tools["pdf_info"], '{"path": "classic_xref.pdf"}'))
    assert pages["facts"]["pages"] == 12
    # Errors are the library's words, as the MCP server sends them.
    missing = invoke(tools["conversation_read"], '{"conversation_id": "nope", "message_id": "m1"}')
    assert missing.startswith("no conversation 'nope'")
    assert invoke(tools["file_read"], "{").startswith("the arguments of file_read are not JSON")
    bad = invoke(tools["file_read"], '{"path": "classic_xref.pdf", "start_line": "x"}')
    assert bad.startswith("bad arguments for file_read: start_line")
    # An image comes back as an image input.
    text, image = invoke(tools["image_view"], '{"path": "red_64x48.png"}')
    assert json.loads(text.text)["width"] == 64
    assert image.image_url.startswith("data:image/png;base64,")
    with pytest.raises(InvalidArgumentError, match="unknown tools tool_search"):
        lean_tools(ws, ("tool_search",))


def test_bad_session_arguments_are_refused(ws: Workspace) -> None:
    with pytest.raises(InvalidArgumentError, match="must not end in|not end in '#<number>'"):
        LeanReplaySession("chat#2", ws)
    with pytest.raises(InvalidArgumentError, match="session_id must be 1-256 printable"):
        LeanReplaySession("", ws)
    with pytest.raises(InvalidArgumentError, match="policy must be a ReplayPolicy, got dict"):
        LeanReplaySession("chat", ws, policy={"min_chars": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="workspace must be a leanreplay Workspace"):
        LeanReplaySession("chat", 42)  # type: ignore[arg-type]


def test_a_folded_session_replays_its_summary_as_responses_items(tmp_path: Path) -> None:
    fold = FoldPolicy(threshold_chars=20_000, keep_last=4)
    ws = Workspace(tmp_path / "home", fold_policy=fold)
    session = LeanReplaySession("folded", ws)
    model = ScriptedModel(calls_per_turn=2, read_back=False)
    agent = agent_for(ws, model)
    for question in ["One?", "Two?", "Three?", "Four?"]:
        run_agent(agent, question, session=session, run_config=config())
    assert ws.fold_state("folded") is not None
    items = run(session.get_items())
    assert items[0]["role"] == "user"
    assert items[0]["content"].startswith("[Summary of the earlier conversation")
    assert items[1]["role"] == "assistant"
    assert_valid(items, "openai-responses")
    run_agent(agent, "Five?", session=session, run_config=config())
    assert model.inputs[-3][0] == items[0]  # the next run's model input starts with it
    # A pop copies the generation and folds it again: still valid, still lean.
    run(session.pop_item())
    items = run(session.get_items())
    assert items[0]["content"].startswith("[Summary of the earlier conversation")
    assert_valid(items, "openai-responses")
