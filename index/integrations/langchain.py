"""LangChain v1 and LangGraph over the store: a middleware for ``create_agent``, a
``pre_model_hook`` for LangGraph graphs, and the tools.

    >>> from langchain.agents import create_agent
    >>> from leanreplay import Workspace
    >>> from leanreplay.integrations.langchain import LeanReplayMiddleware
    >>> ws = Workspace("~/.local/share/leanreplay", roots=["~/project"])
    >>> lean = LeanReplayMiddleware(ws, conversation_id="chat")
    >>> agent = create_agent(model, tools, middleware=[lean])

Before every model call the conversation's new messages are stored (as OpenAI Chat
Completions messages, LangChain's own conversion, with LangChain's message ids) and the model
gets the lean replay back as LangChain messages: a message the replay left alone is the very
object of the agent's state; a changed one (a placeholder in a `ToolMessage`, an elided tool
call input, a card for an inline image) is a copy of it with only that changed. The agent's
state is never rewritten. Needs ``pip install 'leanreplay[langchain]'``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from leanreplay.index._errors import InvalidArgumentError
from leanreplay.index._workspace import Workspace
from leanreplay.index.store._store import check_id
from leanreplay.placeholders import ReplayPolicy, for_provider

from ._common import (
    INTEGRATION_TOOLS,
    answer,
    as_workspace,
    function_schemas,
    missing_framework,
)
from ._items import canonical, restore, store_items, unstored

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
except ImportError as exc:  # pragma: no cover - proven in a subprocess by tests/test_extras.py
    raise missing_framework(__name__, "langchain", exc) from None

__all__ = [
    "LeanReplayMiddleware",
    "lean_messages",
    "lean_pre_model_hook",
    "lean_tools",
    "store_messages",
]


def lean_messages(
    workspace: Workspace,
    conversation_id: str,
    messages: Sequence[BaseMessage],
    policy: ReplayPolicy | None = None,
) -> list[BaseMessage]:
    """Store what of ``messages`` (the conversation so far, then what is new) the
    conversation does not hold yet, and return its lean replay as LangChain messages."""
    plain = store_messages(workspace, conversation_id, messages)
    originals = {
        p["id"]: (m, canonical(p)) for m, p in zip(messages, plain, strict=True) if "id" in p
    }
    out = []
    for replayed in workspace.replay(conversation_id, policy).messages:
        out.append(_langchain(restore(replayed), originals))
    return out


def store_messages(
    workspace: Workspace, conversation_id: str, messages: Sequence[BaseMessage]
) -> list[dict[str, Any]]:
    """Store what of ``messages`` the conversation does not hold yet; returns all of them as
    OpenAI messages with their LangChain ids."""
    plain = [_plain(m) for m in messages]
    store_items(workspace, conversation_id, unstored(workspace, conversation_id, plain))
    return plain


def _plain(message: BaseMessage) -> dict[str, Any]:
    plain: dict[str, Any] = convert_to_openai_messages(message)
    if message.id is not None:
        plain["id"] = message.id
    return plain


def _langchain(
    replayed: dict[str, Any], originals: dict[Any, tuple[BaseMessage, str]]
) -> BaseMessage:
    known = originals.get(replayed.get("id"))
    if known is not None and canonical(replayed) == known[1]:
        return known[0]  # untouched: the state's own object
    sent = for_provider([replayed], "openai")[0]
    if known is None:  # the fold's summary and acknowledgement, a stub, older history
        message = convert_to_messages([sent])[0]
        if isinstance(replayed.get("id"), str) and not replayed.get("stub"):
            message.id = replayed["id"]
        return message
    original = known[0]
    update: dict[str, Any] = {"content": sent.get("content") or ""}
    if isinstance(original, AIMessage) and original.tool_calls:
        # Elided inputs: each long string argument is a placeholder naming conversation_read.
        arguments = {c["id"]: c["function"]["arguments"] for c in sent.get("tool_calls", [])}
        update["tool_calls"] = [
            {**call, "args": json.loads(arguments[call["id"]])} if call["id"] in arguments else call
            for call in original.tool_calls
        ]
    return original.model_copy(update=update)


def lean_pre_model_hook(
    workspace: Workspace | str | os.PathLike[str],
    conversation_id: str,
    *,
    policy: ReplayPolicy | None = None,
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A LangGraph ``pre_model_hook`` (``create_react_agent(..., pre_model_hook=...)``, or a
    node before the model in a graph of your own): it stores the state's new messages and
    returns the lean replay as ``llm_input_messages``, leaving ``messages`` as they are."""
    ws = as_workspace(workspace)
    cid = check_id("conversation_id", conversation_id)

    def hook(state: dict[str, Any]) -> dict[str, Any]:
        messages = state["messages"] if isinstance(state, dict) else state.messages
        return {"llm_input_messages": lean_messages(ws, cid, messages, policy)}

    return hook


class LeanReplayMiddleware(AgentMiddleware):
    """A LangChain v1 ``AgentMiddleware`` for ``create_agent``: every message of the agent is
    stored and each model call gets the lean replay of the conversation (placeholders, cards,
    the fold), its tool calls paired with their results. It adds the readers and the
    conversation tools (`lean_tools`), so the model can bring back what a placeholder elided.

    Args:
        workspace: the `Workspace` (or its home folder) to store in.
        conversation_id: the stored conversation this agent's messages go to.
        policy: the replay's rules (`ReplayPolicy`); the default when None.
        tools: the names of the tools to add (all of `lean_tools` by default; () adds none).
    """

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str],
        *,
        conversation_id: str,
        policy: ReplayPolicy | None = None,
        tools: Sequence[str] = INTEGRATION_TOOLS,
    ) -> None:
        super().__init__()
        if policy is not None and not isinstance(policy, ReplayPolicy):
            raise InvalidArgumentError(
                f"policy must be a ReplayPolicy, got {type(policy).__name__}"
            )
        self.workspace = as_workspace(workspace)
        self.conversation_id = check_id("conversation_id", conversation_id)
        self.policy = policy
        self.tools = lean_tools(self.workspace, tuple(tools))

    def _lean(self, request: ModelRequest) -> ModelRequest:
        lean = lean_messages(self.workspace, self.conversation_id, request.messages, self.policy)
        # LangChain's own message classes (convert_to_messages is typed as their base).
        return request.override(messages=cast(list[AnyMessage], lean))

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        return handler(self._lean(request))

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        # The model's answer is stored at once: the last one of a run has no model call after it.
        store_messages(self.workspace, self.conversation_id, state["messages"])
        return None

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        await asyncio.to_thread(
            store_messages, self.workspace, self.conversation_id, state["messages"]
        )
        return None

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        lean = await asyncio.to_thread(self._lean, request)
        return await handler(lean)


def lean_tools(
    workspace: Workspace | str | os.PathLike[str], names: tuple[str, ...] = INTEGRATION_TOOLS
) -> list[BaseTool]:
    """The readers and the conversation tools as LangChain tools: leanreplay's schemas,
    descriptions and error texts (an error is the tool message's text, status ``error``).
    An image comes back as an image content block."""
    ws = as_workspace(workspace)
    schemas = function_schemas(ws, names)
    return [_tool(ws, name, schemas[name]) for name in names]


def _tool(ws: Workspace, name: str, schema: dict[str, Any]) -> BaseTool:
    def run(**arguments: Any) -> Any:
        result = answer(ws, name, arguments)
        if result.is_error:
            raise ToolException(result.text)
        if not result.images:
            return result.text
        return [
            {"type": "text", "text": result.text},
            *({"type": "image", "base64": data, "mime_type": mime} for mime, data in result.images),
        ]

    return StructuredTool.from_function(
        func=run,
        name=name,
        description=schema["description"],
        args_schema=schema["parameters"],
        handle_tool_error=True,  # the model reads the error text, as from the MCP server
    )
