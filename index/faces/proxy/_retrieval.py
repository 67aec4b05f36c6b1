"""The proxy's own tool calls: the retrieval tools and the readers of a conversation's
attachments, run on a workspace that sees only that conversation (its messages, and the
files saved from its inline attachments), answered like the MCP server answers them."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from leanreplay import cards, placeholders

from ..._errors import WorkspaceError
from ..._workspace import Workspace, tool_schemas
from ._api import Call, Result

__all__ = ["LIMIT_NOTE", "NOT_RUN", "run_calls", "schemas"]

NOT_RUN = (
    "[leanreplay] Not run: the proxy answers at most {rounds} rounds of its own tool "
    "calls per request; ask again in the next turn."
)
LIMIT_NOTE = (
    "[leanreplay] Stopped after {rounds} rounds of retrieval calls in one request; "
    "the model had more to look up. Ask again to continue."
)


def schemas(names: Sequence[str]) -> list[dict[str, Any]]:
    """Our tools' Anthropic-form schemas, in the order of ``names`` (byte-stable)."""
    by_name = _schemas()
    return [by_name[n] for n in names if n in by_name]


@functools.cache
def _schemas() -> dict[str, dict[str, Any]]:
    # The schemas derive from the tool signatures: fixed for the process, and pydantic takes
    # milliseconds to build each of them.
    return {s["name"]: s for s in tool_schemas("anthropic")}


def _result(call: Call, value: Any) -> Result:
    if isinstance(value, dict) and value.get("images"):
        shown = {k: v for k, v in value.items() if k != "images"}
        return Result(call, json.dumps(shown, ensure_ascii=False), list(value["images"]))
    if isinstance(value, dict) and call.name == "image_view" and "data" in value:
        meta = {k: v for k, v in value.items() if k != "data"}
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": value.get("mime"), "data": value["data"]},
        }
        return Result(call, json.dumps(meta, ensure_ascii=False), [image])
    return Result(call, json.dumps(value, ensure_ascii=False))


def run_calls(
    home: str, conversation_id: str, calls: Sequence[Call], *, run: bool, store: str | None = None
) -> list[Result]:
    """Answer the proxy's own calls (``run=False``: each gets the `NOT_RUN` error instead)
    from the store of the proxy's workspace (``store``: its URL, None for the home's)."""
    if not run:
        return [Result(c, NOT_RUN, is_error=True) for c in calls]
    out = []
    with Workspace(home, conversations=[conversation_id], store=store) as scoped:
        for call in calls:
            arguments = call.arguments
            if not isinstance(arguments, dict):
                out.append(Result(call, "the arguments are not a JSON object", is_error=True))
                continue
            try:
                value = scoped.call(call.name, arguments, conversation_id=conversation_id)
            except (WorkspaceError, placeholders.PlaceholderError, cards.CardError) as exc:
                out.append(Result(call, str(exc), is_error=True))
                continue
            except Exception as exc:  # noqa: BLE001 - the model gets a sentence, not a trace
                out.append(
                    Result(
                        call,
                        f"{call.name} failed unexpectedly ({type(exc).__name__}: {exc}); this "
                        "is a leanreplay bug, please report it",
                        is_error=True,
                    )
                )
                continue
            out.append(_result(call, value))
    return out
