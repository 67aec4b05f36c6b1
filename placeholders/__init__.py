"""The replay transformer: lean, deterministic replays that never break tool-call pairing.

>>> from leanreplay.placeholders import replay, ReplayPolicy, check_pairing
>>> result = replay(messages, conversation_id="c1")
>>> result.messages      # same shape as given; stale big tool results are placeholders
>>> check_pairing(result.messages)
[]
"""

from ._checks import check_int
from ._compact import (
    CHARS_PER_TOKEN,
    FILL_MARGIN_TOKENS,
    CompactionResult,
    compact_turn,
    structured_summary,
)
from ._errors import InvalidMessagesError, InvalidPolicyError, PlaceholderError
from ._fold import (
    DEFAULT_FOLD_THRESHOLD_CHARS,
    DEFAULT_KEEP_LAST,
    DEFAULT_MAX_SUMMARY_CHARS,
    CallableSummarizer,
    FoldPolicy,
    OfflineSummarizer,
    Summarizer,
    SummarizerError,
    fold_boundary,
    folded_prefix,
)
from ._overflow import call_with_overflow_retry, continuation_allowed, is_context_overflow
from ._pairing import SPLIT_KEY, STUB_TEXT, check_pairing, repair_pairing
from ._payload import MESSAGE_KEYS, PROVIDERS, Provider, for_provider
from ._replay import (
    CACHE_READ,
    CACHE_WRITE,
    DEFAULT_KEEP_ASSISTANT_TURNS,
    DEFAULT_KEEP_USER_EXCHANGES,
    DEFAULT_MIN_CHARS,
    DEFAULT_PRESSURE_CHARS,
    DEFAULT_PREVIEW_CHARS,
    INPUT_MARKER,
    PLACEHOLDER_MARKER,
    AgeUnit,
    ReplayPolicy,
    ReplayResult,
    Timing,
    call_inputs,
    is_placeholder,
    parse_read_call,
    read_call,
    replay,
    stale_before,
)
from ._shapes import (
    block_text,
    content_chars,
    is_genuine_user,
    is_injected_text,
    is_meta,
    result_slots,
    role_of,
    tool_calls,
)
from ._windows import PairWindow, PairWindowError, last_turns

__all__ = [
    "AgeUnit",
    "CACHE_READ",
    "CACHE_WRITE",
    "CHARS_PER_TOKEN",
    "CallableSummarizer",
    "CompactionResult",
    "DEFAULT_FOLD_THRESHOLD_CHARS",
    "DEFAULT_KEEP_ASSISTANT_TURNS",
    "DEFAULT_KEEP_LAST",
    "DEFAULT_KEEP_USER_EXCHANGES",
    "DEFAULT_MAX_SUMMARY_CHARS",
    "DEFAULT_MIN_CHARS",
    "DEFAULT_PRESSURE_CHARS",
    "DEFAULT_PREVIEW_CHARS",
    "FILL_MARGIN_TOKENS",
    "FoldPolicy",
    "INPUT_MARKER",
    "InvalidMessagesError",
    "InvalidPolicyError",
    "MESSAGE_KEYS",
    "OfflineSummarizer",
    "PLACEHOLDER_MARKER",
    "PROVIDERS",
    "PairWindow",
    "PairWindowError",
    "PlaceholderError",
    "Provider",
    "ReplayPolicy",
    "ReplayResult",
    "SPLIT_KEY",
    "STUB_TEXT",
    "Summarizer",
    "SummarizerError",
    "Timing",
    "block_text",
    "call_inputs",
    "call_with_overflow_retry",
    "check_int",
    "check_pairing",
    "compact_turn",
    "content_chars",
    "continuation_allowed",
    "fold_boundary",
    "folded_prefix",
    "for_provider",
    "is_context_overflow",
    "is_genuine_user",
    "is_injected_text",
    "is_meta",
    "is_placeholder",
    "last_turns",
    "parse_read_call",
    "read_call",
    "repair_pairing",
    "replay",
    "result_slots",
    "role_of",
    "stale_before",
    "structured_summary",
    "tool_calls",
]
