"""Errors raised by `placeholders`.

PlaceholderError
└── InvalidMessagesError   a message list is not in a shape replay understands
"""

from __future__ import annotations

__all__ = ["InvalidMessagesError", "PlaceholderError"]


class PlaceholderError(Exception):
    """Base class of every error `placeholders` raises."""


class InvalidMessagesError(PlaceholderError, ValueError):
    """A message list is not in a shape replay understands; the message says where."""
