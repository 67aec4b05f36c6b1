"""The replay transformer: lean, deterministic replays that never break tool-call pairing.

>>> from placeholders import replay, ReplayPolicy, check_pairing
>>> result = replay(messages, conversation_id="c1")
>>> result.messages      # same shape as given; stale big tool results are placeholders
>>> check_pairing(result.messages)
[]
"""

from ._errors import InvalidMessagesError, PlaceholderError
from ._pairing import check_pairing
from ._replay import (
    DEFAULT_KEEP_ASSISTANT_TURNS,
    DEFAULT_KEEP_USER_EXCHANGES,
    DEFAULT_MIN_CHARS,
    DEFAULT_PREVIEW_CHARS,
    PLACEHOLDER_MARKER,
    AgeUnit,
    ReplayPolicy,
    ReplayResult,
    is_placeholder,
    read_call,
    replay,
    stale_before,
)
from ._shapes import content_chars, is_genuine_user, is_meta, result_slots, tool_calls
from ._windows import PairWindow, PairWindowError, last_turns

__all__ = [
    "AgeUnit",
    "DEFAULT_KEEP_ASSISTANT_TURNS",
    "DEFAULT_KEEP_USER_EXCHANGES",
    "DEFAULT_MIN_CHARS",
    "DEFAULT_PREVIEW_CHARS",
    "InvalidMessagesError",
    "PLACEHOLDER_MARKER",
    "PairWindow",
    "PairWindowError",
    "PlaceholderError",
    "ReplayPolicy",
    "ReplayResult",
    "check_pairing",
    "content_chars",
    "is_genuine_user",
    "is_meta",
    "is_placeholder",
    "last_turns",
    "read_call",
    "replay",
    "result_slots",
    "stale_before",
    "tool_calls",
]
