"""Many logs at once: which files a list of paths, globs and folders names, and the report of
what importing each one did."""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._errors import (
    ConversationNotFoundError,
    ImportFormatError,
    IngestError,
    InvalidArgumentError,
    WorkspaceError,
)
from .._gcpause import gc_paused
from ._attachments import AttachmentSaver
from ._importers import LOG_SUFFIXES, NotALogError, check_log_format, load_log
from ._protocol import StoreProtocol
from ._store import check_id

__all__ = [
    "FileReport",
    "IngestError",
    "IngestReport",
    "IngestStatus",
    "MAX_INGEST_DEPTH",
    "ingest_file",
    "ingest_paths",
    "log_files",
]

IngestStatus = Literal["imported", "appended", "unchanged", "refused", "skipped"]
STATUSES: tuple[IngestStatus, ...] = ("imported", "appended", "unchanged", "refused", "skipped")

_GLOB_CHARS = ("*", "?", "[")
_SUFFIXES_TEXT = "/".join(LOG_SUFFIXES)
MAX_INGEST_DEPTH = 128  # folder levels searched below a folder given to ingest
# fold(conversation id, messages added, the conversation's messages as stored or None)
FoldAdded = Callable[[str, int, Sequence[Mapping[str, Any]] | None], object]


@dataclass(frozen=True)
class FileReport:
    """What ingesting one file did.

    ``status``: ``imported`` (a new conversation), ``appended`` (a grown log: new messages
    added), ``unchanged``, ``refused`` (``reason`` says why; nothing of it stored unless
    ``conversation_ids`` names what was stored before the refusal), or ``skipped`` (a file
    found in a folder that is in no known log format).
    """

    path: str
    status: IngestStatus
    conversation_ids: tuple[str, ...] = ()
    added: int = 0
    format: str | None = None
    notes: tuple[str, ...] = ()
    reason: str | None = None
    error: Exception | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "conversation_ids": list(self.conversation_ids),
            "added": self.added,
            "format": self.format,
            "notes": list(self.notes),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class IngestReport:
    """One `FileReport` per file, in the order they were imported.

    Iterating a report gives the ids of the conversations it stored or found unchanged, so
    ``(cid,) = ws.ingest("chat.jsonl")`` reads the one id of a one-conversation log.
    """

    files: tuple[FileReport, ...]

    @property
    def conversation_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for report in self.files:
            if report.status != "refused":
                seen.update(dict.fromkeys(report.conversation_ids))
        return list(seen)

    @property
    def refused(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "refused"]

    @property
    def ok(self) -> bool:
        """True when no file was refused."""
        return not self.refused

    def counts(self) -> dict[str, int]:
        return {s: sum(f.status == s for f in self.files) for s in STATUSES}

    def summary(self) -> str:
        """``"3 imported, 1 appended, 0 unchanged, 1 refused"`` (and skipped, when any)."""
        counts = self.counts()
        shown = [s for s in STATUSES if s != "skipped" or counts[s]]
        return ", ".join(f"{counts[s]} {s}" for s in shown)

    def to_dict(self) -> dict[str, Any]:
        return {"files": [f.to_dict() for f in self.files], "counts": self.counts()}

    def __iter__(self) -> Iterator[str]:
        return iter(self.conversation_ids)

    def __len__(self) -> int:
        return len(self.conversation_ids)


def log_files(
    paths: Sequence[str | os.PathLike[str]],
) -> Iterator[tuple[str, str | None, str | None]]:
    """``(absolute path, the folder it was found under or None, problem)`` for each file the
    paths name.

    A folder stands for every file under it with a log suffix (``.jsonl``, ``.ndjson``,
    ``.json``, ``.traj.json``), recursively, in sorted order; a glob (``*``, ``?``, ``[``,
    ``**``) for its sorted matches. A path that names nothing, or a folder with no such file
    under it, comes back with the problem. Each file comes once.
    """
    seen: set[str] = set()

    def once(path: str, folder: str | None) -> Iterator[tuple[str, str | None, str | None]]:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            yield path, folder, None

    def folder_files(folder: str) -> Iterator[tuple[str, str | None, str | None]]:
        found_any = False
        for found, why in _walk(folder):
            found_any = True
            yield from once(found, folder) if why is None else iter([(found, folder, why)])
        if not found_any:
            yield folder, None, f"no log found: no {_SUFFIXES_TEXT} file under this folder"

    for given in paths:
        text = os.path.abspath(os.path.expanduser(os.fspath(given)))
        if os.path.isdir(text):
            yield from folder_files(text)
        elif os.path.exists(text):
            yield from once(text, None)
        elif any(c in os.fspath(given) for c in _GLOB_CHARS):
            try:
                matches = sorted(glob.glob(text, recursive=True))
            except RecursionError:  # ** through folders nested deeper than Python recurses
                yield text, None, "the pattern reaches folders nested too deeply; name a folder"
                continue
            if not matches:
                yield text, None, "no file matches this pattern"
            for match in matches:
                if os.path.isdir(match):
                    yield from folder_files(match)
                else:
                    yield from once(match, None)
        else:
            yield text, None, "no file or folder here"


def _walk(folder: str) -> Iterator[tuple[str, str | None]]:
    """(log file, None) under ``folder``, sorted; (folder, why) for a folder past
    `MAX_INGEST_DEPTH`, which is not searched (the walk would recurse past Python's limit)."""
    base = folder.rstrip(os.sep).count(os.sep)
    for top, dirs, files in os.walk(folder):
        dirs.sort()
        if top.count(os.sep) - base >= MAX_INGEST_DEPTH and dirs:
            deeper = os.path.join(top, dirs[0])
            dirs[:] = []
            yield (
                deeper,
                (
                    f"folders nested over {MAX_INGEST_DEPTH} levels deep are not searched; "
                    "name a deeper folder itself"
                ),
            )
        for name in sorted(files):
            if name.endswith(LOG_SUFFIXES):
                yield os.path.join(top, name), None


def ingest_file(
    store: StoreProtocol,
    source: str,
    in_folder: bool,
    *,
    format: str,
    conversation_id: str | None,
    allowed: Collection[str] | None,
    attachments_dir: str,
    fold: FoldAdded | None = None,
) -> FileReport:
    """Import one log into the store and say what it did. A file found in a folder that is in
    no log format is skipped, one named directly is refused; ``fold(id, added)`` runs after
    each conversation that grew (with its messages as stored, when they are all new)."""
    ids: list[str] = []
    added = 0
    new = False
    notes: list[str] = []
    formats: list[str] = []
    try:
        for item in load_log(source, format=format, conversation_id=conversation_id):
            cid = check_id("conversation_id", item.conversation_id)
            if allowed is not None and cid not in allowed:
                raise ConversationNotFoundError(
                    f"conversation {cid!r} is not in this workspace's allowlist"
                )
            saved = AttachmentSaver(attachments_dir)
            # Save the likely new messages' attachments before taking the write lock; the
            # store decides inside its transaction what is new, and asks for any others.
            existed = store.exists(cid)
            stored = store.info(cid).messages if existed else 0
            for message in item.messages[stored:]:
                saved(message)
            fresh = store.ingest(
                cid,
                item.messages,
                source=source,
                format=item.format,
                notes=item.notes,
                attachments=saved,
            )
            added += len(fresh)
            if fold is not None and fresh:
                # A new conversation is what was just imported, ids added: the fold reads
                # these instead of the store's copies.
                as_stored = None
                if not existed and len(fresh) == len(item.messages):
                    as_stored = [
                        m if "id" in m else {**m, "id": i}
                        for m, i in zip(item.messages, fresh, strict=True)
                    ]
                fold(cid, len(fresh), as_stored)
            new = new or not existed
            ids.append(cid)
            notes += item.notes
            formats.append(item.format)
    except NotALogError as exc:
        if in_folder:
            return FileReport(source, "skipped", reason="not in a known log format")
        return FileReport(source, "refused", reason=str(exc), error=exc)
    except WorkspaceError as exc:
        return FileReport(source, "refused", tuple(ids), added, reason=str(exc), error=exc)
    status: IngestStatus = "imported" if new else "appended" if added else "unchanged"
    fmt = formats[0] if formats else None
    return FileReport(source, status, tuple(ids), added, fmt, tuple(dict.fromkeys(notes)))


def ingest_paths(
    store: StoreProtocol,
    paths: Sequence[str | os.PathLike[str]],
    *,
    format: str,
    conversation_id: str | None,
    errors: str,
    progress: Callable[[int, int, str], None] | None,
    allowed: Collection[str] | None,
    attachments_dir: str,
    fold: FoldAdded | None,
) -> IngestReport:
    """`Workspace.ingest`: import every log the paths name, then raise for the refusals (or
    report them, with ``errors="report"``)."""
    check_log_format(format)
    if errors not in ("raise", "report"):
        raise InvalidArgumentError(f'errors must be "raise" or "report", got {errors!r}')
    if conversation_id is not None:
        check_id("conversation_id", conversation_id)
    files = list(log_files(paths))
    if conversation_id is not None and len(files) != 1:
        raise InvalidArgumentError(
            f"a conversation id names one conversation, but the paths name {len(files)} "
            "files; ingest that one file alone, or leave the id out"
        )
    reports = []
    statuses: dict[str, list[str]] = {}  # per folder given, what its files did
    # One disk sync for the whole import, at its end; no collector walks over its messages.
    with store.batch(), gc_paused():
        for done, (path, folder, problem) in enumerate(files):
            if progress is not None:
                progress(done, len(files), path)
            if problem is not None:
                error = ImportFormatError(f"{path}: {problem}")
                reports.append(FileReport(path, "refused", reason=problem, error=error))
                continue
            reports.append(
                ingest_file(
                    store,
                    path,
                    folder is not None,
                    format=format,
                    conversation_id=conversation_id,
                    allowed=allowed,
                    attachments_dir=attachments_dir,
                    fold=fold,
                )
            )
            if folder is not None:
                statuses.setdefault(folder, []).append(reports[-1].status)
    for folder, done_with in statuses.items():
        if all(status == "skipped" for status in done_with):
            why = (
                f"no log found: the {len(done_with):,} {_SUFFIXES_TEXT} file"
                f"{'s' if len(done_with) != 1 else ''} under this folder "
                f"{'are' if len(done_with) != 1 else 'is'} in no log format"
            )
            error = ImportFormatError(f"{folder}: {why}")
            reports.append(FileReport(folder, "refused", reason=why, error=error))
    if progress is not None:
        progress(len(files), len(files), "")
    report = IngestReport(tuple(reports))
    if errors == "raise" and report.refused:
        refused = report.refused
        if len(refused) == 1 and refused[0].error is not None:
            raise refused[0].error
        raise IngestError(
            f"{len(refused)} of {len(reports)} files refused: "
            + "; ".join(str(f.error or f.reason) for f in refused),
            report,
        )
    return report
