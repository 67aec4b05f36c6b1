"""Errors raised by `placeholders`. Every message says what was wrong and how to fix it.

PlaceholderError
├── InvalidMessagesError   a message list is not in a shape replay understands
├── InvalidPolicyError     a `ReplayPolicy` or `FoldPolicy` field is out of its range or type
├── PairWindowError        a pair window argument is invalid; the window is unchanged
└── SummarizerError        a summarizer failed, timed out or answered nothing usable
"""

from __future__ import annotations

__all__ = [
    "InvalidMessagesError",
    "InvalidPolicyError",
    "PairWindowError",
    "PlaceholderError",
    "SummarizerError",
]


class PlaceholderError(Exception):
    """Base class of every error `placeholders` raises."""


class InvalidMessagesError(PlaceholderError, ValueError):
    """A message list is not in a shape replay understands; the message says where."""


class InvalidPolicyError(PlaceholderError, ValueError):
    """A `ReplayPolicy` or `FoldPolicy` field is out of its range or of the wrong type; the
    message names the field, the rule and the value."""


class PairWindowError(PlaceholderError, ValueError):
    """A pair window argument is invalid; the window is unchanged."""


class SummarizerError(PlaceholderError):
    """A summarizer failed, timed out or returned nothing usable; nothing was changed."""
