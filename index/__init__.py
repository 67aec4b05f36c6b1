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
from ._importers import FORMATS
from ._store import ConversationInfo
from ._tools import TOOL_NAMES, tool_schemas
from ._workspace import FoldResult, Workspace

__all__ = [
    "BusyError",
    "ConversationInfo",
    "ConversationNotFoundError",
    "FORMATS",
    "FoldResult",
    "ImportFormatError",
    "InvalidArgumentError",
    "NotAFileError",
    "NotFoundError",
    "OutsideRootsError",
    "PathError",
    "StoreError",
    "TOOL_NAMES",
    "Workspace",
    "WorkspaceError",
    "WrongFileTypeError",
    "tool_schemas",
]
