"""The replay transformer: lean, deterministic replays that never break tool-call pairing."""

from ._errors import InvalidMessagesError, PlaceholderError

__all__ = ["InvalidMessagesError", "PlaceholderError"]
