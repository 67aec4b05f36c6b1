"""The OpenAI Agents SDK over the store: a `Session`, a model input filter and the tools.

    >>> from agents import Agent, RunConfig, Runner
    >>> from leanreplay import Workspace
    >>> from leanreplay.integrations.openai_agents import (
    ...     LeanReplaySession, lean_input_filter, lean_tools)
    >>> ws = Workspace("~/.local/share/leanreplay", roots=["~/project"])
    >>> session = LeanReplaySession("chat", ws)
    >>> agent = Agent(name="helper", tools=lean_tools(ws))
    >>> config = RunConfig(call_model_input_filter=lean_input_filter(ws, session))
    >>> await Runner.run(agent, "Why did the build fail?", session=session, run_config=config)

The session is what the SDK reads between runs; the filter is what every model call inside a
run receives. Both hand the model the lean replay (placeholders, cards, the fold) while the
store keeps every item as the SDK gave it. Needs ``pip install 'leanreplay[agents]'``.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from leanreplay.index._errors import InvalidArgumentError
from leanreplay.index._workspace import Workspace
from leanreplay.index.store._store import check_id
from leanreplay.placeholders import ReplayPolicy, check_int

from ._common import (
    INTEGRATION_TOOLS,
    answer,
    as_workspace,
    function_schemas,
    missing_framework,
)
from ._items import count, last_stored, lean_items, store_items, unstored

try:
    from agents import FunctionTool, ToolOutputImage, ToolOutputText
    from agents.memory import SessionSettings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - proven in a subprocess by tests/test_extras.py
    raise missing_framework(__name__, "agents", exc) from None

if TYPE_CHECKING:
    from agents import TResponseInputItem
    from agents.tool_context import ToolContext

__all__ = ["LeanReplaySession", "lean_input_filter", "lean_tools"]

# A generation after the first is "<session id>#<n>": such ids are the session's own.
_GENERATION = re.compile(r"#[0-9]+\Z")


class LeanReplaySession:
    """The Agents SDK's `Session` over leanreplay's append-only store.

    ``add_items`` stores the SDK's items as given (see `Workspace.messages`); ``get_items``
    returns the lean replay as Responses input items: stale tool output as placeholders that
    name the `conversation_read` call returning it, attachments as cards, a folded prefix as
    its summary. Recent items come back exactly as they were added.

    Nothing is ever deleted. A session is a sequence of *generations*, each one stored
    conversation: the first is ``session_id``, the next ``session_id#2`` and so on; the session
    reads and writes the newest. ``clear_session`` starts an empty generation. ``pop_item``
    starts a generation holding every item but the newest (copied, ids and bytes unchanged)
    and returns that newest item as it was added. Earlier generations stay stored and
    searchable, so every placeholder ever sent still resolves.

    Args:
        session_id: the SDK's session id: 1-240 printable characters, not ending in ``#<n>``.
        workspace: the `Workspace` (or its home folder) to store in.
        policy: the replay's rules (`ReplayPolicy`); the default when None.
        session_settings: the SDK's `SessionSettings` (its ``limit`` is passed to
            ``get_items`` by the runner).
    """

    def __init__(
        self,
        session_id: str,
        workspace: Workspace | str | os.PathLike[str],
        *,
        policy: ReplayPolicy | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        check_id("session_id", session_id)
        if len(session_id) > 240 or _GENERATION.search(session_id):
            raise InvalidArgumentError(
                f"session_id must be at most 240 chars and not end in '#<number>' (the "
                f"session's later generations are named so), got {session_id[:80]!r}"
            )
        if policy is not None and not isinstance(policy, ReplayPolicy):
            raise InvalidArgumentError(
                f"policy must be a ReplayPolicy, got {type(policy).__name__}"
            )
        self.session_id = session_id
        self.workspace = as_workspace(workspace)
        self.policy = policy
        self.session_settings = session_settings
        self._generation = 1
        # One operation at a time, each in a worker thread: the store blocks (SQLite, the
        # replay), and pop_item reads then writes.
        self._lock = threading.Lock()

    async def _run(self, work: Callable[[], Any]) -> Any:
        def locked() -> Any:
            with self._lock:
                return work()

        return await asyncio.to_thread(locked)

    def _name(self, generation: int) -> str:
        return self.session_id if generation == 1 else f"{self.session_id}#{generation}"

    @property
    def generation(self) -> int:
        """The newest generation (1 until the first ``pop_item`` or ``clear_session``)."""
        # Probed every time: another process may have started a generation since.
        while count(self.workspace, self._name(self._generation + 1)) is not None:
            self._generation += 1
        return self._generation

    @property
    def conversation_id(self) -> str:
        """The stored conversation of the newest generation."""
        return self._name(self.generation)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The lean replay of the session, or its last ``limit`` items, oldest first."""
        if limit is not None:
            check_int("limit", limit, minimum=0, error=InvalidArgumentError)

        def work() -> list[dict[str, Any]]:
            items = lean_items(self.workspace, self.conversation_id, self.policy)
            if limit is None:
                return items
            return items[len(items) - limit :] if limit else []

        return await self._run(work)  # type: ignore[no-any-return]  # the SDK's item dicts

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` at the end of the session, as given."""
        if items:
            await self._run(lambda: store_items(self.workspace, self.conversation_id, items))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest item from the session and return it as it was added (None when
        the session is empty). The item stays stored in the generation it was added to.
        Its cost is a copy of the session's other items, in one transaction."""

        def work() -> dict[str, Any] | None:
            cid = self.conversation_id
            newest = last_stored(self.workspace, cid, 1)
            if not newest:
                return None
            self._start_generation(self.workspace.messages(cid)[:-1])
            return newest[0]

        return await self._run(work)  # type: ignore[no-any-return]  # an SDK item dict

    async def clear_session(self) -> None:
        """Start an empty generation; every item stays stored in the earlier ones."""

        def work() -> None:
            if last_stored(self.workspace, self.conversation_id, 1):
                self._start_generation([])

        await self._run(work)

    def _start_generation(self, messages: list[dict[str, Any]]) -> None:
        # One transaction, the stored forms (ids, bytes) unchanged; folded as if appended.
        self.workspace.extend(self._name(self.generation + 1), messages)
        self._generation += 1


def lean_input_filter(
    workspace: Workspace | str | os.PathLike[str],
    conversation_id: str | LeanReplaySession,
    *,
    policy: ReplayPolicy | None = None,
) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
    """A ``RunConfig(call_model_input_filter=...)`` that keeps every model call of a run lean.

    Before each model call it stores what the input holds that the conversation does not
    (the input is the conversation so far and then what is new), and sends the model the
    lean replay of the conversation instead of the input; the instructions are kept.

    Args:
        conversation_id: the stored conversation, or a `LeanReplaySession` (then its newest
            generation, and the session's policy unless ``policy`` is given).
    """
    ws = as_workspace(workspace)
    session = conversation_id if isinstance(conversation_id, LeanReplaySession) else None
    if session is None:
        check_id("conversation_id", conversation_id)
    rules = policy if policy is not None or session is None else session.policy

    def work(given: list[Any]) -> list[dict[str, Any]]:
        cid = session.conversation_id if session is not None else str(conversation_id)
        store_items(ws, cid, unstored(ws, cid, given))
        return lean_items(ws, cid, rules)

    async def lean_input(data: CallModelData[Any]) -> ModelInputData:
        given = list(data.model_data.input)
        if session is not None:
            items: Any = await session._run(lambda: work(given))
        else:
            items = await asyncio.to_thread(work, given)
        return ModelInputData(input=items, instructions=data.model_data.instructions)

    return lean_input


def lean_tools(
    workspace: Workspace | str | os.PathLike[str], names: tuple[str, ...] = INTEGRATION_TOOLS
) -> list[FunctionTool]:
    """The readers and the conversation tools (`conversation_read` brings back what a
    placeholder elided) as the SDK's function tools: leanreplay's schemas, descriptions and
    error texts. An image comes back as an image input."""
    ws = as_workspace(workspace)
    schemas = function_schemas(ws, names)
    return [_function_tool(ws, name, schemas[name]) for name in names]


def _function_tool(ws: Workspace, name: str, schema: dict[str, Any]) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> Any:
        # The readers block (a first pdf_search indexes the file): off the event loop.
        result = await asyncio.to_thread(answer, ws, name, arguments)
        if not result.images:
            return result.text
        return [
            ToolOutputText(text=result.text),
            *(ToolOutputImage(image_url=url) for url in result.data_urls()),
        ]

    return FunctionTool(
        name=name,
        description=schema["description"],
        params_json_schema=schema["parameters"],
        on_invoke_tool=invoke,
        strict_json_schema=False,  # optional arguments with defaults: not strict-mode schemas
    )
