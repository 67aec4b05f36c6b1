"""The embedded store, the Tantivy index and the on-demand tools behind them.

    >>> from leanreplay.index import Workspace
    >>> ws = Workspace("~/.local/share/leanreplay", roots=["~/project"])
    >>> mid = ws.append("c1", {"role": "user", "content": "Why did the build fail?"})
    >>> ws.replay("c1").messages            # cards, fold summary, placeholders applied
    >>> ws.call("file_read", {"path": "build.log", "start_line": 120})
    >>> ws.conversation_read("c1", mid)     # the original, a page of 40,000 chars at a time
    >>> ws.messages("c1")                   # the stored originals, byte-exact

`Workspace` is the facade. Every model-facing tool is one typed method marked `@tool`
(``TOOL_NAMES``, in definition order); a subclass adds a tool with one more. `tool_schemas`
exports them for function calling. Errors derive from `WorkspaceError`.
"""

import sys as _sys

# Confinement opens files by walking from a root with O_NOFOLLOW and dir_fd, and the readers use
# pread: POSIX calls that Windows lacks. Say so at import instead of failing later.
if _sys.platform not in ("linux", "darwin"):
    raise ImportError("leanreplay runs on Linux and macOS; Windows is not supported yet.")

from ._errors import (
    BusyError,
    ConversationChangedError,
    ConversationNotFoundError,
    FileChangedError,
    ImportFormatError,
    IngestError,
    InvalidArgumentError,
    NotAFileError,
    NotALogError,
    NotFoundError,
    OutsideRootsError,
    PathError,
    StoreError,
    StoreVersionError,
    WorkspaceError,
    WrongFileTypeError,
)
from ._shapes import SCHEMA_FORMATS
from ._tools import tool
from ._workspace import (
    SNAPSHOTS_KEPT,
    TOOL_NAMES,
    FoldResult,
    SizePoint,
    Workspace,
    tool_schemas,
)
from .search._capabilities import Capability, CapabilityIndex
from .store._importers import LOG_FORMATS, LoadedConversation, load_log
from .store._ingest import FileReport, IngestReport, IngestStatus
from .store._store import ConversationInfo, ConversationStats

__all__ = [
    "BusyError",
    "Capability",
    "CapabilityIndex",
    "ConversationChangedError",
    "ConversationInfo",
    "ConversationNotFoundError",
    "ConversationStats",
    "FileChangedError",
    "FileReport",
    "FoldResult",
    "ImportFormatError",
    "IngestError",
    "IngestReport",
    "IngestStatus",
    "InvalidArgumentError",
    "LOG_FORMATS",
    "LoadedConversation",
    "NotAFileError",
    "NotALogError",
    "NotFoundError",
    "OutsideRootsError",
    "PathError",
    "SCHEMA_FORMATS",
    "SNAPSHOTS_KEPT",
    "SizePoint",
    "StoreError",
    "StoreVersionError",
    "TOOL_NAMES",
    "Workspace",
    "WorkspaceError",
    "WrongFileTypeError",
    "load_log",
    "tool",
    "tool_schemas",
]
