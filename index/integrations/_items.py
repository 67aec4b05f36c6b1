"""OpenAI Responses items (what the Agents SDK keeps) in the store, and back as the SDK gave
them.

An item is stored as given. The store needs a unique ``id`` per message, so two kinds of
item get one of its own, with the item's own id kept beside it under `ITEM_ID_KEY`: an item
without an ``id`` (a user message, a ``function_call_output``: `ITEM_ID_KEY` is null), and an
item whose ``id`` is already taken in the conversation (chat-completions models in the SDK
give every item ``"__fake_id__"``). A role-less item of a type the replay does not know (a
hosted tool call) is stored with the role ``assistant`` and `NO_ROLE_KEY`. `restore` undoes
exactly that, keys in their order, so what comes back is the item that was given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from leanreplay.index._errors import ConversationNotFoundError, InvalidArgumentError
from leanreplay.index._workspace import Workspace
from leanreplay.index.store._store import check_id, plain_json
from leanreplay.placeholders import ReplayPolicy, for_provider, role_of

__all__ = [
    "ITEM_ID_KEY",
    "NO_ROLE_KEY",
    "canonical",
    "count",
    "last_stored",
    "lean_items",
    "restore",
    "store_items",
    "stored_items",
    "unstored",
]

ITEM_ID_KEY = "leanreplay_item_id"  # the item's own id (null: it had none) when the store's differs
NO_ROLE_KEY = "leanreplay_no_role"  # the item had no role; the store's "assistant" is not its own


def canonical(item: Mapping[str, Any]) -> str:
    """The item's content, whatever the order of its keys: what "the same item" means here."""
    return json.dumps(item, sort_keys=True, ensure_ascii=False)


def count(workspace: Workspace, cid: str) -> int | None:
    """How many messages conversation ``cid`` holds; None when there is no such conversation."""
    try:
        (stats,) = workspace.conversation_stats(cid)
    except ConversationNotFoundError:
        return None
    return stats.messages


def _taken(workspace: Workspace, cid: str, item_id: str) -> bool:
    try:
        workspace.raw_message(cid, item_id)
    except ConversationNotFoundError:
        return False
    return True


def _free_id(workspace: Workspace, cid: str) -> str:
    """An id no message of ``cid`` has, as the store would assign it (``m<seq>``)."""
    seq = (count(workspace, cid) or 0) + 1
    candidate, n = f"m{seq}", 1
    while _taken(workspace, cid, candidate):
        n += 1
        candidate = f"m{seq}-{n}"
    return candidate


def _stored_form(workspace: Workspace, cid: str, item: dict[str, Any]) -> dict[str, Any]:
    out = dict(item)
    own = item.get("id")
    if "id" not in item:
        out[ITEM_ID_KEY] = None  # the store appends its own id
    elif not (isinstance(own, str) and _valid(own)) or _taken(workspace, cid, own):
        out["id"] = _free_id(workspace, cid)  # in the item's own id's place: keys keep order
        out[ITEM_ID_KEY] = own
    if "role" not in item and role_of(item) is None:
        out["role"] = "assistant"
        out[NO_ROLE_KEY] = True
    return out


def store_items(workspace: Workspace, cid: str, items: Iterable[Any]) -> list[str]:
    """Append ``items`` (dicts or SDK objects) to conversation ``cid``; returns the store's
    ids. Each item is one `Workspace.append` (cards, attachments, the fold)."""
    ids: list[str] = []
    for raw in items:
        item = plain_json(raw)
        if not isinstance(item, dict):
            ids.append(workspace.append(cid, item))  # refused there, with the reason
            continue
        ids.append(workspace.append(cid, _stored_form(workspace, cid, item)))
    return ids


def _valid(item_id: str) -> bool:
    try:
        check_id("id", item_id)
    except InvalidArgumentError:
        return False
    return True


def restore(message: Mapping[str, Any]) -> dict[str, Any]:
    """The item as it was given, from its stored (or replayed) form."""
    out = dict(message)
    if ITEM_ID_KEY in out:
        own = out.pop(ITEM_ID_KEY)
        if own is None:
            out.pop("id", None)
        else:
            out["id"] = own
    if out.pop(NO_ROLE_KEY, None) is True:
        out.pop("role", None)
    return out


def stored_items(workspace: Workspace, cid: str) -> list[dict[str, Any]]:
    """Every stored item of ``cid``, byte for byte as it was given ([] when there is none)."""
    if count(workspace, cid) is None:
        return []
    return [restore(m) for m in workspace.messages(cid)]


def last_stored(workspace: Workspace, cid: str, n: int) -> list[dict[str, Any]]:
    """The last ``n`` stored items of ``cid``, as given."""
    if n <= 0 or not count(workspace, cid):
        return []
    return [restore(m) for _, m in workspace.message_page(cid, limit=n)]


def lean_items(
    workspace: Workspace, cid: str, policy: ReplayPolicy | None = None
) -> list[dict[str, Any]]:
    """The lean replay of ``cid`` as Responses input items: placeholders, cards and the fold
    applied; every item the replay left alone exactly as it was given."""
    if not count(workspace, cid):
        return []
    fold = workspace.fold_state(cid)
    generation = fold["generation"] if fold else None
    synthetic = {f"fold-{generation}-summary", f"fold-{generation}-ack"} if fold else set()
    out = []
    for message in workspace.replay(cid, policy).messages:
        if message.get("stub") is True or message.get("id") in synthetic:
            # The fold's preamble and acknowledgement, a stub result for an unanswered call:
            # the replay's own items, sent with only the keys the Responses API takes.
            out.append(for_provider([message], "openai-responses")[0])
        else:
            out.append(restore(message))
    return out


def unstored(workspace: Workspace, cid: str, items: list[Any]) -> list[Any]:
    """The tail of ``items`` after the conversation's newest stored item: what a model input
    holds that the store does not (all of it when the newest stored item is not in it).

    A model input is the conversation so far, as originals or already lean, then what is
    new. The newest stored item is never elided, so it is found verbatim; of several copies,
    the one whose predecessor is the stored one before it (or its lean form) wins.
    """
    last = last_stored(workspace, cid, 2)
    if not last:
        return list(items)
    given = [restore(plain_json(item)) for item in items]
    target = canonical(last[-1])
    matches = [i for i in range(len(given) - 1, -1, -1) if canonical(given[i]) == target]
    if not matches:
        return list(items)
    for i in matches:
        if len(last) < 2 or i == 0:
            break
        if canonical(given[i - 1]) == canonical(last[0]) or _same_slot(given[i - 1], last[0]):
            return list(items[i + 1 :])
    return list(items[matches[0] + 1 :])


def _same_slot(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    # The item before the newest may be in the input lean (a placeholder in its output).
    keys = ("type", "role", "call_id", "id")
    return all(a.get(k) == b.get(k) for k in keys)
