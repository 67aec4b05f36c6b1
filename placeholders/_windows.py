"""Turn and pair windows: keep the recent part of a conversation, whole turns only."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._checks import check_int
from ._errors import PairWindowError
from ._shapes import is_genuine_user

__all__ = ["PairWindow", "PairWindowError", "last_turns"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_SYSTEM_ROLES = ("system", "developer")


def last_turns(
    messages: Sequence[Mapping[str, Any]], n: int, *, keep_system: bool = True
) -> list[Mapping[str, Any]]:
    """The last ``n`` turns: from the n-th most recent genuine user message to the end.

    A turn is a genuine user message and everything up to the next one, so tool calls and
    their results always stay together. With fewer than ``n`` user messages everything is
    kept. Leading system messages are kept too unless ``keep_system`` is False.

    Raises:
        PairWindowError: ``n`` is not an int >= 1.
    """
    check_int("n", n, minimum=1, error=PairWindowError)
    starts = [i for i, m in enumerate(messages) if is_genuine_user(m)]
    if len(starts) < n:
        return list(messages)
    start = starts[-n]
    head: list[Mapping[str, Any]] = []
    if keep_system:
        for m in messages[:start]:
            if m.get("role") not in _SYSTEM_ROLES:
                break
            head.append(m)
    return head + list(messages[start:])


def _check_text(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise PairWindowError(f"{what} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise PairWindowError(f"{what} must not be blank")
    if _SURROGATE.search(value):
        raise PairWindowError(f"{what} contains a lone surrogate; send valid Unicode text")
    return value


class PairWindow:
    """Whole user/assistant pairs in arrival order, bounded by count and a codepoint budget.

    The budget is the sum of ``len()`` of the stored texts (Unicode codepoints); the policy
    string is outside it. Over either limit, the oldest whole pairs are dropped. A pair that
    alone exceeds the budget is rejected and the history stays as it was.
    """

    def __init__(self, conversation_id: str, policy: str, *, max_pairs: int, budget: int) -> None:
        self._conversation_id = _check_text("conversation_id", conversation_id)
        self._policy = _check_text("policy", policy)
        self._max_pairs = check_int("max_pairs", max_pairs, minimum=1, error=PairWindowError)
        self._budget = check_int("budget", budget, minimum=1, error=PairWindowError)
        self._pairs: list[tuple[str, str]] = []
        self._dropped = 0

    def _check_scope(self, conversation_id: object) -> None:
        if conversation_id != self._conversation_id:
            raise PairWindowError(
                f"this window belongs to conversation {self._conversation_id!r}, "
                f"not {conversation_id!r}"
            )

    def append_pair(self, conversation_id: str, pair: Mapping[str, str]) -> None:
        """Add one ``{"user": str, "assistant": str}`` pair, dropping the oldest as needed.

        Raises:
            PairWindowError: wrong conversation, missing or extra keys, non-str, blank or
                invalid text, or a pair longer than the whole budget. Nothing changes then.
        """
        self._check_scope(conversation_id)
        if not isinstance(pair, Mapping):
            raise PairWindowError(f"pair must be a dict, got {type(pair).__name__}")
        keys = set(pair)
        if keys != {"user", "assistant"}:
            missing = sorted({"user", "assistant"} - keys)
            extra = sorted(map(repr, keys - {"user", "assistant"}))
            raise PairWindowError(
                "pair must have exactly the keys 'user' and 'assistant'"
                + (f"; missing {missing}" if missing else "")
                + (f"; unexpected {', '.join(extra)}" if extra else "")
            )
        user = _check_text("pair['user']", pair["user"])
        assistant = _check_text("pair['assistant']", pair["assistant"])
        size = len(user) + len(assistant)
        if size > self._budget:
            raise PairWindowError(
                f"pair is {size} codepoints, over the whole budget of {self._budget}; "
                "shorten it or raise the budget"
            )
        candidate = [*self._pairs, (user, assistant)]
        total = sum(len(u) + len(a) for u, a in candidate)
        dropped = 0
        while len(candidate) > self._max_pairs or total > self._budget:
            u, a = candidate.pop(0)
            total -= len(u) + len(a)
            dropped += 1
        self._pairs = candidate
        self._dropped += dropped

    def export(self, conversation_id: str) -> dict[str, Any]:
        """A detached snapshot: conversation_id, policy, pairs, history_codepoints,
        dropped_pairs."""
        self._check_scope(conversation_id)
        return {
            "conversation_id": self._conversation_id,
            "policy": self._policy,
            "pairs": [{"user": u, "assistant": a} for u, a in self._pairs],
            "history_codepoints": sum(len(u) + len(a) for u, a in self._pairs),
            "dropped_pairs": self._dropped,
        }

    def reset(self, conversation_id: str) -> None:
        """Forget every pair and the drop count; the policy stays."""
        self._check_scope(conversation_id)
        self._pairs = []
        self._dropped = 0
