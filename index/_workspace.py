"""`Workspace`: the facade over the store, the index and the tools."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import Field

from placeholders import ReplayPolicy, ReplayResult, replay, result_slots

from ._errors import ConversationNotFoundError, ImportFormatError
from ._importers import load
from ._store import ConversationInfo, Store, check_id, encode_message
from ._tools import call_tool

__all__ = ["Workspace"]


class Workspace:
    """Conversations, files and the tools that read them, rooted at ``home``.

    Args:
        home: folder for the store, indexes and logs (created if missing).
        roots: folders the file tools may read; relative paths resolve against the first.
        conversations: if given, the conversation tools see only these ids; any other id is
            "not found".
    """

    def __init__(
        self,
        home: str | os.PathLike[str],
        roots: Iterable[str | os.PathLike[str]] = (),
        *,
        conversations: Iterable[str] | None = None,
    ) -> None:
        self.home = os.path.abspath(os.fspath(home))
        self.roots = tuple(os.path.realpath(os.fspath(r)) for r in roots)
        self.allowed = frozenset(conversations) if conversations is not None else None
        self.store = Store(self.home)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # conversations

    def _visible(self, conversation_id: object) -> str:
        cid = check_id("conversation_id", conversation_id)
        if self.allowed is not None and cid not in self.allowed:
            raise ConversationNotFoundError(f"no conversation {cid!r}")
        return cid

    def conversations(self) -> list[str]:
        """Ids of the stored conversations this workspace may see."""
        ids = self.store.conversation_ids()
        return [i for i in ids if self.allowed is None or i in self.allowed]

    def info(self, conversation_id: str) -> ConversationInfo:
        """Source, format, importer notes and message count of a conversation."""
        return self.store.info(self._visible(conversation_id))

    def ingest(
        self,
        path: str | os.PathLike[str],
        *,
        format: str = "auto",
        conversation_id: str | None = None,
    ) -> list[str]:
        """Import a log file (see `FORMATS`); returns the conversation ids it stored.

        Re-importing a log that has grown appends only the new messages; a log that no
        longer matches what is stored under its id is refused.

        Raises:
            ImportFormatError: the file is not in the format given or detected, or it
                conflicts with a stored conversation of the same id.
        """
        source = os.path.abspath(os.fspath(path))
        if not os.path.isfile(source):
            raise ImportFormatError(f"no file at {source!r} to ingest")
        if conversation_id is not None:
            check_id("conversation_id", conversation_id)
        ids = []
        for item in load(source, format=format, conversation_id=conversation_id):
            cid = check_id("conversation_id", item.conversation_id)
            if self.allowed is not None and cid not in self.allowed:
                raise ConversationNotFoundError(
                    f"conversation {cid!r} is not in this workspace's allowlist"
                )
            new = self._new_messages(cid, item.messages)
            self.store.append(cid, new, source=source, format=item.format, notes=item.notes)
            ids.append(cid)
        return ids

    def _new_messages(self, cid: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not self.store.exists(cid):
            return messages
        stored = self.store.messages(cid)
        if len(stored) > len(messages):
            raise ImportFormatError(
                f"conversation {cid!r} already holds {len(stored)} messages, more than this "
                "log; ingest it under another --conversation-id"
            )
        for old, new in zip(stored, messages, strict=False):
            candidate = new if "id" in new else {**new, "id": old.id}
            if encode_message(candidate) != old.body:
                raise ImportFormatError(
                    f"conversation {cid!r} is already stored with different messages (first "
                    f"difference at message {old.seq}); ingest under another --conversation-id"
                )
        return messages[len(stored) :]

    def append(self, conversation_id: str, message: Mapping[str, Any]) -> str:
        """Store one message at the end of a conversation (created if new); returns its id."""
        cid = self._visible(conversation_id)
        return self.store.append(cid, [message])[0]

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        """The stored originals, in order, each with its ``id``."""
        cid = self._visible(conversation_id)
        return [m.message() for m in self.store.messages(cid)]

    def replay(self, conversation_id: str, policy: ReplayPolicy | None = None) -> ReplayResult:
        """The lean replay of a stored conversation."""
        cid = self._visible(conversation_id)
        return replay(self.messages(cid), conversation_id=cid, policy=policy)

    # tools

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Run a model-facing tool by name with JSON arguments, validated against its
        signature (what the CLI ``call`` command and the MCP server do)."""
        return call_tool(self, tool, arguments)

    def conversation_read(
        self,
        conversation_id: Annotated[
            str, Field(description="Conversation id, as named in the placeholder.")
        ],
        message_id: Annotated[str, Field(description="Message id, as named in the placeholder.")],
        tool_call_id: Annotated[
            str | None,
            Field(
                description="The tool call whose result to return, when the message holds several."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Return a stored message, or one tool result of it, byte-exact, as a placeholder names it.

        Returns ``conversation_id``, ``message_id``, ``role``, ``content`` and ``message``
        (the whole original); with ``tool_call_id``, ``content`` is that result's content.
        """
        cid = self._visible(conversation_id)
        mid = check_id("message_id", message_id)
        stored = self.store.message(cid, mid)
        message = stored.message()
        out: dict[str, Any] = {
            "conversation_id": cid,
            "message_id": mid,
            "role": message.get("role"),
            "content": message.get("content"),
            "message": message,
        }
        if tool_call_id is not None:
            check_id("tool_call_id", tool_call_id)
            slots = [s for s in result_slots(message) if s.tool_call_id == tool_call_id]
            if not slots:
                known = [s.tool_call_id for s in result_slots(message)]
                raise ConversationNotFoundError(
                    f"message {mid!r} holds no result for tool call {tool_call_id!r}"
                    + (f"; it holds {', '.join(map(repr, known))}" if known else "")
                )
            out["tool_call_id"] = tool_call_id
            out["content"] = slots[0].content
            out["is_error"] = slots[0].is_error
        return out
