"""Provider errors and the one retry: which errors say the input outgrew the context window
(OpenAI, Anthropic, Bedrock, Gemini, LiteLLM), and a call that compacts once and retries
exactly once when they do."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._compact import FILL_MARGIN_TOKENS, Event, compact_turn
from ._fold import Summarizer

__all__ = ["call_with_overflow_retry", "continuation_allowed", "is_context_overflow"]

# The catalogue: phrases providers use for an input over the context window.
_OVERFLOW = re.compile(
    "|".join(
        [
            r"context_length_exceeded",
            r"maximum context length",
            r"context length (?:is|of) \d+",
            r"prompt is too long",
            r"input length and `?max_tokens`? exceed context limit",
            r"model_context_window_exceeded",
            r"exceeds? the (?:model'?s? )?(?:maximum )?context (?:window|length|limit)",
            r"context window (?:is )?(?:exceeded|too small|full)",
            r"too many (?:input )?tokens",
            r"input is too long for requested model",
            r"exceeds the maximum number of tokens",
            r"request too large for model",
            r"reduce the length of the messages",
            r"ContextWindowExceededError",
            r"string too long\. expected a string with maximum length",
        ]
    ),
    re.IGNORECASE,
)
_MALFORMED = re.compile(
    r"tool_use.{0,40}without.{0,20}tool_result|unexpected .?tool_use_id|tool_call_id.{0,60}"
    r"(?:not found|did not have response|must be followed)|roles must alternate|"
    r"messages with role 'tool' must be a response",
    re.IGNORECASE,
)


def _error_text(error: object) -> str:
    parts = [str(error)]
    for attr in ("message", "body", "code", "type", "response"):
        value = getattr(error, attr, None)
        if value is not None and not callable(value):
            parts.append(str(value))
    if isinstance(error, Mapping):
        parts.append(repr(error))
    return " ".join(parts)


def is_context_overflow(error: object) -> bool:
    """True if a provider error (exception, dict or text) says the input is too long.

    Malformed-history errors (a tool_use without its tool_result, roles out of order) are
    not overflows: compacting would not fix them.
    """
    text = _error_text(error)
    if _MALFORMED.search(text):
        return False
    return bool(_OVERFLOW.search(text))


def call_with_overflow_retry(
    call: Callable[[list[dict[str, Any]]], Any],
    messages: Sequence[Mapping[str, Any]],
    *,
    context_window: int,
    output_reserve: int,
    summarizer: Summarizer | None = None,
    conversation_id: str | None = None,
    on_event: Event | None = None,
) -> Any:
    """Call the provider; on a context-overflow error compact once and retry exactly once.

    Any other error, or a second failure, is raised as is.
    """
    try:
        return call([m if isinstance(m, dict) else dict(m) for m in messages])
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        compacted = compact_turn(
            messages,
            context_window=context_window,
            output_reserve=output_reserve,
            summarizer=summarizer,
            conversation_id=conversation_id,
            force=True,
            on_event=on_event,
        )
    return call(compacted.messages)


def continuation_allowed(
    input_tokens: int, context_window: int, margin: int = FILL_MARGIN_TOKENS
) -> bool:
    """False once the input is within ``margin`` tokens of the window: stop a max_tokens
    continuation loop before the next request overflows."""
    return context_window - input_tokens > margin
