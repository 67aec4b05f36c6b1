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
    ConversationNotFoundError,
    FileChangedError,
    ImportFormatError,
    IngestError,
    InvalidArgumentError,
    NotAFileError,
    NotFoundError,
    OutsideRootsError,
    PathError,
    StoreError,
    StoreVersionError,
    WorkspaceError,
    WrongFileTypeError,
)
from ._tools import tool
from ._workspace import TOOL_NAMES, FoldResult, Workspace, tool_schemas
from .store._importers import FORMATS
from .store._ingest import FileReport, IngestReport
from .store._store import ConversationInfo

__all__ = [
    "BusyError",
    "ConversationInfo",
    "ConversationNotFoundError",
    "FORMATS",
    "FileChangedError",
    "FileReport",
    "FoldResult",
    "ImportFormatError",
    "IngestError",
    "IngestReport",
    "InvalidArgumentError",
    "NotAFileError",
    "NotFoundError",
    "OutsideRootsError",
    "PathError",
    "StoreError",
    "StoreVersionError",
    "TOOL_NAMES",
    "Workspace",
    "WorkspaceError",
    "WrongFileTypeError",
    "tool",
    "tool_schemas",
]
