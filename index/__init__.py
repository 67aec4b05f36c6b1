"""The embedded store, the Tantivy index and the on-demand tools behind them."""

from ._errors import (
    BusyError,
    ConversationNotFoundError,
    ImportFormatError,
    InvalidArgumentError,
    NotAFileError,
    NotFoundError,
    OutsideRootsError,
    PathError,
    StoreError,
    WorkspaceError,
    WrongFileTypeError,
)

__all__ = [
    "BusyError",
    "ConversationNotFoundError",
    "ImportFormatError",
    "InvalidArgumentError",
    "NotAFileError",
    "NotFoundError",
    "OutsideRootsError",
    "PathError",
    "StoreError",
    "WorkspaceError",
    "WrongFileTypeError",
]
