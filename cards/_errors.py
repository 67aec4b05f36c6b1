"""Errors raised by `cards`.

Only problems with the path itself raise; anything wrong *inside* a file becomes a card
warning instead, so every readable file gets a card.

    CardError
    ├── FileMissingError        the path does not exist
    ├── NotARegularFileError    a directory, FIFO, socket or device
    └── FileUnreadableError     the path exists but cannot be opened (permissions, I/O)
"""

from __future__ import annotations

__all__ = ["CardError", "FileMissingError", "FileUnreadableError", "NotARegularFileError"]


class CardError(Exception):
    """Base class of every error `cards` raises."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class FileMissingError(CardError):
    """The path does not exist."""


class NotARegularFileError(CardError):
    """The path is a directory, FIFO, socket or device, not a regular file."""


class FileUnreadableError(CardError):
    """The path exists but cannot be opened or read."""
