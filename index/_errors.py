"""Errors raised by `index`. Every message says what was wrong and what to do instead, in the
library's own terms (argument and tool names, never a command-line flag): tools return it to
the model as is. ``names`` on an error lists the library names its fix refers to, so that a
face can say them in its own words (the CLI adds its flags).

    WorkspaceError
    ├── InvalidArgumentError       a tool argument or option is malformed or out of range
    ├── PathError                  a file path cannot be served
    │   ├── OutsideRootsError      resolves outside every configured root
    │   ├── NotFoundError          nothing there
    │   ├── NotAFileError          a directory, FIFO, socket or device
    │   └── FileChangedError       truncated or rewritten while it was being read
    ├── WrongFileTypeError         e.g. pdf_read on something that is not a PDF
    ├── ConversationNotFoundError  unknown (or not allowed) conversation or message id
    ├── ImportFormatError          an input file is not in the format asked for or detected
    │   ├── NotALogError           no known log format fits the file (format "auto")
    │   └── IngestError            some files of an ingest were refused (``report`` says which)
    ├── ConversationChangedError   another writer appended to the conversation since it was read
    ├── ProxyError                 the proxy's own failure, answered in the API's error format
    │   └── RequestBodyError       a request body that is not the JSON its API takes
    ├── BusyError                  another process holds the writer past the wait limit
    └── StoreError                 the store on disk is unusable
        └── StoreVersionError      written by a newer leanreplay, or too old for a read-only home
"""

from __future__ import annotations

import errno
import stat
from typing import Any

__all__ = [
    "BusyError",
    "ConversationChangedError",
    "ConversationNotFoundError",
    "FileChangedError",
    "ImportFormatError",
    "IngestError",
    "InvalidArgumentError",
    "NotAFileError",
    "NotALogError",
    "NotFoundError",
    "OutsideRootsError",
    "PathError",
    "ProxyError",
    "RequestBodyError",
    "StoreError",
    "StoreVersionError",
    "WorkspaceError",
    "WrongFileTypeError",
    "home_error",
]


class WorkspaceError(Exception):
    """Base class of every error `index` raises.

    Args:
        names: the library names (arguments such as ``"roots"``, tools or methods such as
            ``"conversations"``) the message tells the reader to use.
    """

    names: tuple[str, ...] = ()

    def __init__(self, *args: object, names: tuple[str, ...] = ()) -> None:
        super().__init__(*args)
        if names:
            self.names = names


class InvalidArgumentError(WorkspaceError, ValueError):
    """A tool argument or option is malformed or out of range."""


class PathError(WorkspaceError):
    """A file path cannot be served."""


class OutsideRootsError(PathError):
    """The path resolves outside every configured root."""


class NotFoundError(PathError):
    """Nothing exists at the path."""


class NotAFileError(PathError):
    """The path is a directory, FIFO, socket or device."""


class FileChangedError(PathError):
    """The file was truncated or rewritten while it was being read; a retry reads it anew."""


class WrongFileTypeError(WorkspaceError):
    """The file is not of the type the tool reads."""


class ConversationNotFoundError(WorkspaceError):
    """Unknown or not-allowed conversation, message or tool call id."""


class ImportFormatError(WorkspaceError):
    """An input file is not in the format asked for or detected."""


class NotALogError(ImportFormatError):
    """No known log format fits the file (format "auto")."""


class IngestError(ImportFormatError):
    """Some files were refused; ``report`` (an `IngestReport`) says what happened to each."""

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class ConversationChangedError(WorkspaceError):
    """A conditional append found the conversation longer than the caller read it: another
    writer appended first. Nothing was stored; read it again."""


class ProxyError(WorkspaceError):
    """A failure of the proxy itself (not of its upstream): the client gets ``status`` and
    the message in its API's own error format."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class RequestBodyError(ProxyError, ValueError):
    """A request body that is not the JSON its API takes (status 400)."""

    def __init__(self, message: str) -> None:
        super().__init__(400, message)


class BusyError(WorkspaceError):
    """Another process holds the single writer longer than the wait limit."""


class StoreError(WorkspaceError):
    """The store on disk is unusable."""


class StoreVersionError(StoreError):
    """The store was written by a newer leanreplay (upgrade leanreplay), or needs an upgrade
    that a read-only home cannot take (open it once where the home can be written)."""


def home_error(what: str, exc: OSError) -> StoreError:
    """A one-line `StoreError` for an `OSError` met writing under the home; it names only
    the home-relative ``what`` (the home's path is not the model's business)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"cannot write {what}: the disk holding the home is full; free space")
    if exc.errno == errno.EROFS:
        return StoreError(
            f"cannot write {what}: the home is on a read-only file system (reading stored "
            "conversations and files still works)"
        )
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        return StoreError(
            f"cannot use {what}: a file stands where the home needs a folder; move it away"
        )
    return StoreError(f"cannot write {what}: {exc.strerror or exc}")


def not_a_file(shown: str, mode: int, rule: str) -> NotAFileError:
    """The refusal of what is not a regular file (a FIFO blocks its reader, a device such as
    /dev/zero never ends): ``shown`` is the path as the caller gave it, ``rule`` who reads
    what ("the file tools read regular files")."""
    if stat.S_ISDIR(mode):
        kind = "a directory"
    elif stat.S_ISFIFO(mode):
        kind = "a FIFO"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    else:
        kind = "not a regular file"
    return NotAFileError(f"{shown} is {kind}; {rule}")
