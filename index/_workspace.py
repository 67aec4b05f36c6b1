"""`Workspace`: the facade over the store, the index and the tools."""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import datetime
import errno
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from itertools import takewhile
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from leanreplay.cards import CardError, card_for, card_for_descriptor, quote
from leanreplay.placeholders import (
    CHARS_PER_TOKEN,
    CompactionResult,
    FoldPolicy,
    OfflineSummarizer,
    ReplayPolicy,
    ReplayResult,
    Summarizer,
    call_with_overflow_retry,
    check_int,
    compact_turn,
    content_chars,
    is_genuine_user,
    read_call,
)

from ._errors import (
    ConversationNotFoundError,
    ImportFormatError,
    InvalidArgumentError,
    NotFoundError,
    StoreError,
    WrongFileTypeError,
)
from ._tools import META_TOOLS, call_tool, current_conversation, current_progress, tool_schemas
from .search._capabilities import CapabilityIndex
from .search._convindex import MessageIndex
from .search._pdfindex import PageIndex
from .store._activations import Activations
from .store._attachments import AttachmentSaver
from .store._home import mark_home
from .store._importers import FORMATS
from .store._ingest import FileReport, IngestError, IngestReport, ingest_file, log_files
from .store._lifecycle import (
    FoldResult,
    SizePoint,
    append_event,
    fold_as_appended,
    fold_conversation,
    lean_replay,
    read_events,
    replay_at_turn,
    size_series,
)
from .store._pages import MAX_READ_CHARS, next_read_call, original, page, readable
from .store._store import ConversationInfo, FoldRecord, Store, StoredMessage, check_id, plain_json
from .tools._archives import extract_member, list_archive
from .tools._docs import iter_parts
from .tools._images import view_image
from .tools._lines import MAX_READ_LINES, LineIndex, read_lines, search_lines, tail_lines
from .tools._listing import MAX_SCANNED, confined_dir, matching_files
from .tools._paths import (
    OpenFile,
    Roots,
    fingerprint,
    open_confined,
    resolve_roots,
    root_notices,
)
from .tools._pdfread import (
    MAX_PDF_READ_CHARS,
    page_range,
    pdf_backend,
    pdf_page_count,
    read_pages,
)
from .tools._pdftext import (
    ProgressCallback,
    page_count,
    pdf_metadata,
)
from .tools._tables import (
    TableFile,
    parse_rows,
    query_table,
    read_csv_rows,
    read_parquet_rows,
    read_sheet_rows,
)
from .tools._transcode import encoding_of, utf8_view

if TYPE_CHECKING:  # a separate line: the store import above is everyone's merge point
    from .store._store import ConversationStats

__all__ = ["SNAPSHOTS_KEPT", "FoldResult", "SizePoint", "Workspace"]

# Roots of the `Workspace.call` running in this thread or task, when it names its own.
_call_roots: ContextVar[Roots | None] = ContextVar("leanreplay_roots", default=None)

SNAPSHOTS_KEPT = 50  # prompt snapshots kept per home, newest first

# Argument types shared by several tools: the descriptions reach the model through the schema.
FilePath = Annotated[str, Field(description="File path, absolute or relative to a root.")]
PdfPath = Annotated[str, Field(description="PDF path, absolute or relative to a root.")]
TablePath = Annotated[
    str,
    Field(
        description="Table file (CSV, TSV, xlsx, xlsm, ods, Parquet), absolute or relative "
        "to a root."
    ),
]
DocPath = Annotated[
    str,
    Field(
        description="Document (docx, pptx, odt, odp, epub, html, markdown), absolute or "
        "relative to a root."
    ),
]
Member = Annotated[
    str | None,
    Field(
        max_length=4096,
        description="Entry inside an archive at path (zip, tar, tar.gz, gz, bz2, xz), as "
        "archive_list names it.",
    ),
]
SheetName = Annotated[
    str | None, Field(description="Sheet name of a workbook; default the first sheet.")
]
WordsQuery = Annotated[
    str, Field(min_length=1, max_length=1000, description='Words or "a phrase" to find.')
]


class Workspace:
    """Conversations, files and the tools that read them, rooted at ``home``.

    Args:
        home: folder for the store, indexes and logs (created if missing).
        roots: folders the file tools may read (none: they read only saved attachments);
            a relative path resolves against the first root that has it.
        conversations: if given, the conversation tools see only these ids; any other id is
            "not found".
    """

    def __init__(
        self,
        home: str | os.PathLike[str],
        roots: Iterable[str | os.PathLike[str]] = (),
        *,
        conversations: Iterable[str] | None = None,
        fold_policy: FoldPolicy | None = None,
        summarizer: Summarizer | None = None,
        auto_fold: bool = True,
    ) -> None:
        self.home = os.path.abspath(os.path.expanduser(os.fspath(home)))
        self.attachments_dir = os.path.join(self.home, "attachments")
        self.members_dir = os.path.join(self.home, "members")
        try:
            os.makedirs(self.attachments_dir, exist_ok=True)
            os.makedirs(self.members_dir, exist_ok=True)
        except OSError as exc:
            if not os.path.isdir(self.home) or exc.errno != errno.EROFS:
                raise StoreError(
                    f"cannot use {self.home!r} as the home: {exc.strerror}; give a writable "
                    "folder as the home",
                    names=("home",),
                ) from None
            # A read-only home still serves reads; it just has no attachments folder to add.
        mark_home(self.home)
        self._roots = self._resolve(roots)
        self.notices = root_notices(self._roots)  # for the operator: the CLI prints them
        self.allowed = frozenset(conversations) if conversations is not None else None
        self.fold_policy = fold_policy or FoldPolicy()
        self.summarizer: Summarizer = summarizer or OfflineSummarizer()
        self.auto_fold = auto_fold
        self.store = Store(self.home)
        self._page_index: PageIndex | None = None
        self._message_index: MessageIndex | None = None
        self._capabilities: CapabilityIndex | None = None
        self._activations = Activations(os.path.join(self.home, "activations"))

    def _attachment_gate(self, real: str, shown: str) -> None:
        if self.allowed is not None and not self.allowed & self.store.attachment_owners(
            os.path.basename(real)
        ):
            raise NotFoundError(f"no file at {shown!r}; check the name")

    def _resolve(self, roots: Iterable[str | os.PathLike[str]]) -> Roots:
        # Saved attachments are readable by the file tools, whatever roots were given, but only
        # those of the allowed conversations; nothing else of the home is ever served, except
        # archive members extracted for the tools (under hashed names, never their own).
        saved = [d for d in (self.attachments_dir, self.members_dir) if os.path.isdir(d)]
        return Roots(
            resolve_roots([*(os.path.expanduser(os.fspath(r)) for r in roots), *saved]),
            private=[os.path.realpath(self.home)],
            attachments=os.path.realpath(self.attachments_dir),
            gate=self._attachment_gate,
            public=[os.path.realpath(self.members_dir)],
        )

    @property
    def roots(self) -> Roots:
        """The folders the file tools read: those given, or those of the current `call`."""
        override = _call_roots.get()
        return self._roots if override is None else override

    def close(self) -> None:
        self.store.close()
        self._page_index = None
        self._message_index = None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # conversations

    def _visible(self, conversation_id: object) -> str:
        cid = check_id("conversation_id", conversation_id)
        if self.allowed is not None and cid not in self.allowed:
            raise ConversationNotFoundError(f"no conversation {cid!r}")
        return cid

    def conversations(self) -> list[str]:
        """Ids of the stored conversations this workspace may see."""
        ids = self.store.conversation_ids()
        return [i for i in ids if self.allowed is None or i in self.allowed]

    def info(self, conversation_id: str) -> ConversationInfo:
        """Source, format, importer notes and message count of a conversation."""
        return self.store.info(self._visible(conversation_id))

    def ingest(
        self,
        *paths: str | os.PathLike[str],
        format: str = "auto",
        conversation_id: str | None = None,
        errors: Literal["raise", "report"] = "raise",
        progress: Callable[[int, int, str], None] | None = None,
        fold: bool = True,
    ) -> IngestReport:
        """Import agent logs (see `FORMATS`): files, globs and folders (every file with a log
        suffix under it, recursively, in sorted order). A Claude Code project folder gives
        every session.

        Re-importing a log that has grown appends only the new messages; a log that no
        longer matches what is stored under its id is refused. Iterating the returned report
        gives the conversation ids; ``report.files`` says per file whether it was imported,
        appended, unchanged, refused (with the reason) or skipped (in a folder, no log format).

        Args:
            conversation_id: store the one conversation of the one file under this id.
            errors: ``"raise"`` (default): after trying every file, raise if any was refused
                (the one error itself, or `IngestError` with the ``report``); ``"report"``:
                return the report with the refusals in it.
            progress: called with (files done, files in all, path) before each file.
            fold: fold the new messages as if they had been appended one at a time (one
                fold each time the unsummarized part crosses the threshold; see `append`).
                False, or ``auto_fold=False`` on the workspace, leaves folding to `fold`.

        Raises:
            ImportFormatError: a file is not in the format given or detected, or it
                conflicts with a stored conversation of the same id.
            InvalidArgumentError: an unknown format, or a conversation id with several files.
        """
        if format not in FORMATS:
            raise InvalidArgumentError(
                f"format must be one of {', '.join(FORMATS)}, got {format!r}"
            )
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
        for done, (path, in_folder, problem) in enumerate(files):
            if progress is not None:
                progress(done, len(files), path)
            if problem is not None:
                error = ImportFormatError(f"{path}: {problem}")
                reports.append(FileReport(path, "refused", reason=problem, error=error))
                continue
            reports.append(
                ingest_file(
                    self.store,
                    path,
                    in_folder,
                    format=format,
                    conversation_id=conversation_id,
                    allowed=self.allowed,
                    attachments_dir=self.attachments_dir,
                    fold=self._fold_added if fold and self.auto_fold else None,
                )
            )
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

    def _fold_added(self, cid: str, new: int) -> list[FoldResult]:
        return fold_as_appended(self.store, cid, new, self.fold_policy, self.summarizer, self.home)

    def append(self, conversation_id: str, message: Mapping[str, Any] | Any) -> str:
        """Store one message at the end of a conversation (created if new); returns its id.

        ``message`` is a dict in a provider's shape, or a provider SDK object as it came back
        (Anthropic ``Message``, OpenAI ``ChatCompletionMessage``, a Responses output item), or
        a dict holding such objects (``{"role": "assistant", "content": response.content}``):
        anything with ``model_dump`` is stored as its JSON form without ``None`` fields.
        Inline attachments are saved under the home; when the unsummarized part of the
        conversation grows past the fold threshold, the prefix is folded (``auto_fold``).
        """
        cid = self._visible(conversation_id)
        message = plain_json(message)
        saved = AttachmentSaver(self.attachments_dir)
        saved(message)  # before the transaction: the write lock is not held for the copy
        mid = self.store.append(cid, [message], attachments=saved)[0]
        if self.auto_fold:
            fold = self.store.fold(cid)
            if (
                self.store.chars_after(cid, fold.through_seq if fold else 0)
                > self.fold_policy.threshold_chars
            ):
                self.fold(cid)
        return mid

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        """The stored originals, in order, each with its ``id``."""
        cid = self._visible(conversation_id)
        return [m.message() for m in self.store.messages(cid)]

    def replay(
        self,
        conversation_id: str,
        policy: ReplayPolicy | None = None,
        *,
        snapshot: bool = False,
        budget_tokens: int | None = None,
    ) -> ReplayResult:
        """The lean replay of a stored conversation: attachments as cards, a folded prefix
        as its summary, stale tool results as placeholders.

        With ``snapshot=True`` (a replay about to be sent to a model) a prompt snapshot is
        recorded: time, size, estimated tokens against ``budget_tokens`` (the input budget,
        if known), placeholders and fold; the home keeps the last `SNAPSHOTS_KEPT`.
        """
        cid = self._visible(conversation_id)
        fold = self.store.fold(cid)
        if fold is None:
            messages = self.messages(cid)
        else:
            messages, fold = self._folded_view(cid, fold)
        result = lean_replay(cid, messages, self.store.attachment_cards(cid), fold, policy)
        if snapshot:
            self._snapshot(cid, result.messages, result, budget_tokens)
        return result

    def _folded_view(self, cid: str, fold: FoldRecord) -> tuple[list[dict[str, Any]], FoldRecord]:
        """Only what a folded replay shows: the leading system messages and the messages after
        the fold (a 100k-message conversation reads its tail, not 100k rows), with the fold
        renumbered to that list."""
        system: list[StoredMessage] = []
        while True:
            after = system[-1].seq if system else 0
            page = self.store.messages_page(cid, before_seq=after + 9, limit=8)
            lead = list(takewhile(lambda m: m.role in ("system", "developer"), page))
            system += lead
            if len(lead) < 8:
                break
        tail = self.store.messages(cid, after_seq=max(fold.through_seq, len(system)))
        messages = [m.message() for m in (*system, *tail)]
        return messages, dataclasses.replace(fold, through_seq=len(system))

    def _snapshot(
        self,
        cid: str,
        sent: Sequence[Mapping[str, Any]],
        result: ReplayResult,
        budget_tokens: int | None,
        compaction: Mapping[str, Any] | None = None,
        source: str = "replay",
    ) -> None:
        fold = self.store.fold(cid)
        chars = sum(content_chars(m) for m in sent)
        stats = self.store.stats_of(cid)
        record = {
            "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
            "conversation_id": cid,
            "source": source,
            "messages_stored": stats.messages,
            "last_message_id": stats.last_id,
            "messages_sent": len(sent),
            "chars": chars,
            "chars_unfolded": self.store.chars_after(cid, 0),
            "estimated_tokens": int(chars / CHARS_PER_TOKEN + 0.5),
            "budget_tokens": budget_tokens,
            "placeholders": result.placeholders,
            "elided_chars": result.elided_chars,
            "folded": fold is not None,
            "fold_generation": fold.generation if fold else 0,
            "compacted": compaction is not None,
            "compaction": dict(compaction) if compaction is not None else None,
        }
        self.store.add_snapshot(cid, record, SNAPSHOTS_KEPT)

    def snapshots(self, conversation_id: str | None = None) -> list[dict[str, Any]]:
        """The prompt snapshots kept in this home (the last `SNAPSHOTS_KEPT`), oldest first;
        only those of ``conversation_id`` when given."""
        if conversation_id is not None:
            return self.store.snapshots(self._visible(conversation_id))
        return [
            s
            for s in self.store.snapshots()
            if self.allowed is None or s.get("conversation_id") in self.allowed
        ]

    def model_call(
        self,
        conversation_id: str,
        call: Callable[[list[dict[str, Any]]], Any],
        *,
        context_window: int,
        output_reserve: int,
        reported_input_tokens: int | None = None,
        policy: ReplayPolicy | None = None,
        summarizer: Summarizer | None = None,
    ) -> Any:
        """One model call of an agent loop: replay the conversation lean, compact it in memory
        if it is over 75% of the input budget, call ``call(messages)`` and, on a
        context-overflow error, compact once and retry exactly once. Every request sent is
        recorded as a prompt snapshot and every compaction in the event log. Returns what
        ``call`` returns; storing the reply (`append`) stays with the caller.
        """
        cid = self._visible(conversation_id)
        lean = self.replay(cid, policy)
        budget = context_window - output_reserve
        compacted = self.compact_turn(
            lean.messages,
            context_window=context_window,
            output_reserve=output_reserve,
            reported_input_tokens=reported_input_tokens,
            summarizer=summarizer,
            conversation_id=cid,
        )
        applied: list[dict[str, Any] | None] = [None]
        if compacted.triggered:
            applied[0] = {
                "tokens_before": compacted.tokens_before,
                "tokens_after": compacted.tokens_after,
                "actions": compacted.actions,
            }

        def send(messages: list[dict[str, Any]]) -> Any:
            self._snapshot(cid, messages, lean, budget, applied[0], source="model_call")
            return call(messages)

        def on_event(event: str, data: dict[str, Any]) -> None:
            self._log_event(event, cid, data)
            if event == "compaction.applied":
                applied[0] = {k: data.get(k) for k in ("tokens_before", "tokens_after", "actions")}

        return call_with_overflow_retry(
            send,
            compacted.messages,
            context_window=context_window,
            output_reserve=output_reserve,
            summarizer=summarizer,
            conversation_id=cid,
            on_event=self._paired(cid, on_event),
        )

    def replay_at_turn(
        self, conversation_id: str, turn: int, policy: ReplayPolicy | None = None
    ) -> tuple[ReplayResult, SizePoint]:
        """What the model received after ``turn`` (1-based; a genuine user message starts
        each): the replay of the messages stored by then, with the fold as it stood had the
        conversation been appended message by message (`size_series`' point for that turn).
        Writes nothing."""
        cid = self._visible(conversation_id)
        check_int("turn", turn, minimum=1, error=InvalidArgumentError)
        found = replay_at_turn(
            cid,
            self.messages(cid),
            turn,
            cards=self.store.attachment_cards(cid),
            fold_policy=self.fold_policy,
            summarizer=self.summarizer,
            replay_policy=policy,
        )
        if found is None:
            messages = self.messages(cid)
            turns = sum(1 for i, m in enumerate(messages) if i and is_genuine_user(m)) + bool(
                messages
            )
            raise InvalidArgumentError(
                f"conversation {cid!r} has {turns} turns; turn {turn} is past its end"
            )
        return found

    # what `leanreplay view` reads: bounded, index-backed views of the store

    def conversation_stats(self, conversation_id: str | None = None) -> list[ConversationStats]:
        """Message count, last position, last id and last write time of each visible
        conversation (or of one), from the store's indexes: fast on millions of messages."""
        if conversation_id is not None:
            return [self.store.stats_of(self._visible(conversation_id))]
        return [s for s in self.store.stats() if self.allowed is None or s.id in self.allowed]

    def message_page(
        self, conversation_id: str, *, before: int | None = None, limit: int = 50
    ) -> list[tuple[int, dict[str, Any]]]:
        """Up to ``limit`` (position, message) pairs just before position ``before`` (the
        tail when None), in order: a page of a conversation of any length."""
        cid = self._visible(conversation_id)
        check_int("limit", limit, minimum=1, error=InvalidArgumentError)
        return [(m.seq, m.message()) for m in self.store.messages_page(cid, before, limit)]

    def message_position(self, conversation_id: str, message_id: str) -> int:
        """The 1-based position of a message in its conversation."""
        cid = self._visible(conversation_id)
        return self.store.message(cid, check_id("message_id", message_id)).seq

    def raw_message(self, conversation_id: str, message_id: str) -> str:
        """A message's stored JSON text, exactly as stored."""
        cid = self._visible(conversation_id)
        return self.store.message(cid, check_id("message_id", message_id)).body

    def stored_chars(self, conversation_id: str, *, after: int = 0) -> int:
        """Content chars of the messages after position ``after`` (sizes kept at append)."""
        return self.store.chars_after(self._visible(conversation_id), after)

    def attachment_cards(self, conversation_id: str) -> dict[tuple[str, int], str]:
        """The card of each saved inline attachment, by (message id, block index)."""
        return self.store.attachment_cards(self._visible(conversation_id))

    def size_series(
        self,
        conversation_id: str,
        policy: ReplayPolicy | None = None,
        *,
        max_points: int | None = None,
    ) -> list[SizePoint]:
        """Replay size after each turn, as if the conversation had been appended message by
        message under this workspace's fold policy and summarizer (the fold's sawtooth, as
        ``bench/bench_fold.py`` prints it). Writes nothing; see `store._lifecycle.size_series`.
        """
        cid = self._visible(conversation_id)
        return size_series(
            cid,
            self.messages(cid),
            cards=self.store.attachment_cards(cid),
            fold_policy=self.fold_policy,
            summarizer=self.summarizer,
            replay_policy=policy,
            max_points=max_points,
        )

    # the rolling prefix fold

    def fold(self, conversation_id: str, summarizer: Summarizer | None = None) -> FoldResult:
        """Fold everything before a legal boundary into the conversation's one summary.

        Returns what happened; ``folded`` is False (with the reason) when the unsummarized
        part is under the threshold, no user turn can start the verbatim tail, another fold
        of the conversation is running or won, or the summarizer failed. Originals are never
        edited or deleted.
        """
        cid = self._visible(conversation_id)
        return fold_conversation(
            self.store, cid, self.fold_policy, summarizer or self.summarizer, self.home
        )

    def fold_state(self, conversation_id: str) -> dict[str, Any] | None:
        """The stored summary: ``summary``, ``summarized_through_message`` (its position),
        ``summarized_through_message_id`` and ``generation``; None if never folded."""
        fold = self.store.fold(self._visible(conversation_id))
        if fold is None:
            return None
        return {
            "summary": fold.summary,
            "summarized_through_message": fold.through_seq,
            "summarized_through_message_id": fold.through_id,
            "generation": fold.generation,
        }

    # the in-turn emergency compactor

    def compact_turn(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        context_window: int,
        output_reserve: int,
        reported_input_tokens: int | None = None,
        summarizer: Summarizer | None = None,
        conversation_id: str | None = None,
        force: bool = False,
    ) -> CompactionResult:
        """`placeholders.compact_turn`, with its events appended to the daily JSONL log
        ``home/logs/compaction-YYYY-MM-DD.jsonl``."""
        return compact_turn(
            messages,
            context_window=context_window,
            output_reserve=output_reserve,
            reported_input_tokens=reported_input_tokens,
            summarizer=summarizer,
            conversation_id=conversation_id,
            force=force,
            on_event=self._paired(
                conversation_id, lambda event, data: self._log_event(event, conversation_id, data)
            ),
        )

    def _paired(
        self, conversation_id: str | None, then: Callable[[str, dict[str, Any]], None]
    ) -> Callable[[str, dict[str, Any]], None]:
        """An event hook that gives the started and applied events of one compaction the
        same ``compaction_id``."""
        current = [""]

        def hook(event: str, data: dict[str, Any]) -> None:
            if event == "compaction.started" or not current[0]:
                current[0] = uuid.uuid4().hex[:12]
            then(event, {"compaction_id": current[0], **data})

        return hook

    def _log_event(self, event: str, conversation_id: str | None, data: Mapping[str, Any]) -> None:
        # The event log is a record of what happened, not part of it: a full or read-only
        # home must not fail the compaction the runtime needs.
        with contextlib.suppress(OSError):
            append_event(os.path.join(self.home, "logs"), event, conversation_id, data)

    def compaction_events(
        self, conversation_id: str | None = None, *, limit: int = 500
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` compaction events of the home's daily logs, oldest first; only
        those of ``conversation_id`` when given."""
        cid = self._visible(conversation_id) if conversation_id is not None else None
        events = read_events(os.path.join(self.home, "logs"), cid, limit=limit)
        if self.allowed is not None:
            events = [e for e in events if e.get("conversation_id") in self.allowed]
        return events

    # tools

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        progress: ProgressCallback | None = None,
        conversation_id: str | None = None,
        roots: Iterable[str | os.PathLike[str]] | None = None,
    ) -> Any:
        """Run a model-facing tool by name with JSON arguments, validated against its
        signature (what the CLI ``call`` command and the MCP server do).

        Args:
            progress: called as ``progress(done, total, message)`` during long work.
            conversation_id: whose tools list `tool_activate` extends.
            roots: the folders the file tools may read for this call only, instead of the
                workspace's (the MCP server passes the roots its client offers).
        """
        if roots is None:  # the workspace's roots, or those of an enclosing call
            return call_tool(
                self, tool, arguments, progress=progress, conversation_id=conversation_id
            )
        token = _call_roots.set(self._resolve(roots))
        try:
            return call_tool(
                self, tool, arguments, progress=progress, conversation_id=conversation_id
            )
        finally:
            _call_roots.reset(token)

    def conversation_read(
        self,
        conversation_id: Annotated[
            str, Field(description="Conversation id, as named in the placeholder.")
        ],
        message_id: Annotated[str, Field(description="Message id, as named in the placeholder.")],
        tool_call_id: Annotated[
            str | None,
            Field(
                description="The tool call whose result (or input) to return, when the message "
                "holds several."
            ),
        ] = None,
        part: Annotated[
            Literal["input"] | None,
            Field(
                description='"input" returns the tool call\'s input (tool_use.input or '
                "function.arguments) instead of its result; needs tool_call_id."
            ),
        ] = None,
        offset: Annotated[
            int, Field(ge=0, description="Where to start in the original text (a `next` call).")
        ] = 0,
        max_chars: Annotated[
            int,
            Field(
                ge=2_000,
                le=MAX_READ_CHARS,
                description=f"Longest answer to return; at most {MAX_READ_CHARS:,}.",
            ),
        ] = MAX_READ_CHARS,
    ) -> dict[str, Any]:
        """Return the original of a stored message or tool result, as a placeholder names it,
        a page of at most 40,000 chars at a time (with the `next` call), images as images.

        ``content`` is a page of the original text: a string content verbatim, structured
        content as its JSON (with each image replaced by a marker and returned in ``images`` as
        a ready-to-send image part, and other inline files by their card). Concatenating the
        pages gives the text back exactly; ``format`` says which (``text`` or ``json``).
        Without ``tool_call_id``, a message that holds one tool result gives that result.
        With ``part="input"``, the original is the input of call ``tool_call_id`` instead
        (Anthropic ``tool_use.input`` as JSON, OpenAI ``function.arguments`` verbatim).
        The byte-exact stored message is `Workspace.messages`.

        Raises:
            ConversationNotFoundError: unknown conversation, message or tool call id.
            InvalidArgumentError: ``offset`` past the end of the text.
        """
        cid = self._visible(conversation_id)
        mid = check_id("message_id", message_id)
        message = self.store.message(cid, mid).message()
        fields, value = original(message, mid, tool_call_id, part)
        head = {"conversation_id": cid, "message_id": mid, "role": message.get("role"), **fields}
        unit = readable(value, self.attachments_dir)
        if offset > len(unit.text):
            raise InvalidArgumentError(
                f"offset {offset} is past the end: the original text has {len(unit.text):,} "
                "chars; start again at offset 0"
            )

        def envelope(content: str, next_offset: int | None) -> dict[str, Any]:
            nxt = None if next_offset is None else next_read_call(cid, mid, head, next_offset)
            return {
                **head,
                "format": unit.format,
                "offset": offset,
                "total_chars": len(unit.text),
                "content": content,
                "next": nxt,
            }

        return page(unit, offset, max_chars, envelope)

    def file_read(
        self,
        path: FilePath,
        start_line: Annotated[
            int,
            Field(
                ge=-MAX_READ_LINES,
                description="First line to return (1-based); negative for the last lines, "
                "e.g. -100 for the last 100.",
            ),
        ] = 1,
        end_line: Annotated[
            int | None,
            Field(
                ge=1, description=f"Last line to return; default start_line + {MAX_READ_LINES - 1}."
            ),
        ] = None,
        member: Member = None,
    ) -> dict[str, Any]:
        """Read numbered lines of a text file of any size; long output is cut with a `next` call.

        Returns ``content`` as ``"N\\ttext"`` lines, ``end_line``, ``total_lines`` (once known),
        ``notes`` and ``next``. A negative ``start_line`` reads the last lines backwards from
        the end without indexing the file.
        """
        path = self._member_path(path, member)
        if start_line == 0:
            raise InvalidArgumentError(
                "start_line is 1-based: use 1 for the first line or -N for the last N lines"
            )
        if start_line < 0 and end_line is not None:
            raise InvalidArgumentError(
                "end_line goes with a positive start_line; start_line=-N alone reads the last "
                "N lines"
            )
        if end_line is not None and end_line < start_line:
            raise InvalidArgumentError(f"end_line {end_line} is before start_line {start_line}")
        with open_confined(path, self.roots) as f, self._text_view(f) as (text, shown):
            index = LineIndex(text, self._lines_dir, shown_path=shown)
            if start_line < 0:
                return tail_lines(index, -start_line)
            return read_lines(index, start_line, end_line)

    def file_search(
        self,
        path: FilePath,
        query: Annotated[
            str, Field(min_length=1, max_length=1000, description="Literal text to find.")
        ],
        limit: Annotated[
            int, Field(ge=1, le=500, description="Most matching lines to return.")
        ] = 50,
        ignore_case: Annotated[bool, Field(description="Match ASCII letters in any case.")] = False,
        start_line: Annotated[int, Field(ge=1, description="Line to start searching from.")] = 1,
        member: Member = None,
    ) -> dict[str, Any]:
        """Find lines containing literal text in a text file of any size, with line numbers."""
        path = self._member_path(path, member)
        with open_confined(path, self.roots) as f, self._text_view(f) as (text, shown):
            return search_lines(
                LineIndex(text, self._lines_dir, shown_path=shown),
                query,
                limit,
                ignore_case=ignore_case,
                start_line=start_line,
            )

    @property
    def _lines_dir(self) -> str:
        return os.path.join(self.home, "lines")

    @contextlib.contextmanager
    def _text_view(self, f: OpenFile) -> Iterator[tuple[OpenFile, str]]:
        """The file as UTF-8 (a UTF-16 file through its transcoded copy), and its own path.

        A file of a known non-text kind (PDF, image, audio, archive, office file) is refused
        with the tools that read it; unknown bytes are read as text (a log whose head holds
        NULs after a copytruncate is still a log)."""
        card = card_for_descriptor(f.fd, path=f.path, light=True)
        if "file_read" not in card.tools and (card.tools or card.kind != "binary"):
            readers = (
                f"read it with {', '.join(card.tools)}"
                if card.tools
                else "no tool reads its content; its card shows its facts"
            )
            raise WrongFileTypeError(f"{f.path!r} is {card.mime}, not text: {readers}")
        encoding = encoding_of(f)
        if encoding is None:
            yield f, f.path
            return
        with utf8_view(f, os.path.join(self.home, "transcoded"), encoding) as copy:
            yield copy, f.path

    # PDFs

    @property
    def _pages(self) -> PageIndex:
        if self._page_index is None:
            self._page_index = PageIndex(self.home)
        return self._page_index

    def pdf_info(
        self,
        path: PdfPath,
    ) -> dict[str, Any]:
        """Show a PDF's facts (pages, version, encryption), its metadata and top-level outline."""
        with open_confined(path, self.roots) as f:
            card = card_for_descriptor(f.fd, path=f.path).to_dict()
            if card["kind"] != "pdf":
                raise WrongFileTypeError(f"{f.path!r} is {card['mime']}, not a PDF")
            try:
                card.update(pdf_metadata(f.path, (f.dev, f.ino)))
            except Exception as exc:  # noqa: BLE001 - metadata is a bonus; the card stands
                card["notes"] = [f"metadata unreadable: {type(exc).__name__}: {exc}"]
            return card

    def pdf_search(
        self,
        path: PdfPath,
        query: WordsQuery,
        limit: Annotated[int, Field(ge=1, le=50, description="Most pages to return.")] = 10,
    ) -> dict[str, Any]:
        """Find the PDF pages that best match words or a phrase, with snippets.

        The first search of a file extracts and indexes its pages (reporting progress to the
        hook given to `call`); later searches reuse the index until the file changes.
        """
        with open_confined(path, self.roots) as f:
            pages = pdf_page_count(f)
            with pdf_backend(f):
                page_count(f.path, (f.dev, f.ino))  # the backend must load it to index it
            with pdf_backend(f, only_typed=True):
                _, indexed_now, hits, notes = self._pages.find(
                    f, pages, query, limit, current_progress()
                )
            return {
                "path": f.path,
                "query": query,
                "pages": pages,
                "indexed_now": indexed_now,
                "hits": hits,
                "notes": notes,
                "next": (
                    f'pdf_read(path={json.dumps(f.path)}, pages="{hits[0]["page"]}")'
                    if hits
                    else None
                ),
            }

    def pdf_read(
        self,
        path: PdfPath,
        pages: Annotated[
            str,
            Field(
                pattern=r"^\s*\d+\s*(-\s*\d+\s*)?$",
                description='A page or range, e.g. "7" or "3-5".',
            ),
        ],
    ) -> dict[str, Any]:
        """Return the text of a page range of a PDF, at most 20 pages or 40,000 chars per call."""
        first, last = page_range(pages)
        with open_confined(path, self.roots) as f:
            file_id = fingerprint(f)

            def indexed(a: int, b: int) -> dict[int, str]:
                try:
                    if not self._pages.indexed_pages(file_id):
                        return {}
                    return self._pages.page_texts(file_id, a, b)
                except StoreError:  # the page index is a cache; the file itself is the source
                    return {}

            return read_pages(f, first, last, pdf_page_count(f), indexed)

    # images

    def image_view(
        self,
        path: Annotated[str, Field(description="Image path, absolute or relative to a root.")],
        max_side: Annotated[
            int, Field(ge=16, le=4096, description="Longest side of the returned image.")
        ] = 1568,
        member: Member = None,
    ) -> dict[str, Any]:
        """Show an image file, downscaled to at most max_side pixels, as image content."""
        path = self._member_path(path, member)
        with open_confined(path, self.roots) as f:
            return view_image(f, max_side)

    # conversation search

    @property
    def _messages_index(self) -> MessageIndex:
        if self._message_index is None:
            self._message_index = MessageIndex(self.home, self.store)
        return self._message_index

    def conversation_search(
        self,
        query: WordsQuery,
        conversation_id: Annotated[
            str | None, Field(description="Search only this conversation; default all.")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=50, description="Most messages to return.")] = 10,
    ) -> dict[str, Any]:
        """Search stored messages (folded ones too); returns ids, snippets and read calls."""
        scope: list[str] | None = None
        if conversation_id is not None:
            scope = [self._visible(conversation_id)]
        elif self.allowed is not None:
            scope = sorted(self.allowed)
        index = self._messages_index
        index.catch_up()
        hits = index.search(query, conversations=scope, limit=limit)
        for hit in hits:
            hit["read"] = read_call(hit["conversation_id"], hit["message_id"])
        return {"query": query, "hits": hits}

    # folders

    def file_list(
        self,
        path: Annotated[
            str, Field(description="Folder, absolute or relative to the first root.")
        ] = ".",
        pattern: Annotated[
            str,
            Field(
                min_length=1,
                max_length=1000,
                description='Glob on paths relative to the folder: "**/*.py", "docs/*".',
            ),
        ] = "**/*",
        limit: Annotated[int, Field(ge=1, le=1000, description="Most files to return.")] = 200,
        after: Annotated[
            str | None, Field(description="Continue after this relative path (from next).")
        ] = None,
    ) -> dict[str, Any]:
        """List the files under a folder as one-line cards, sorted by path, with a `next` call;
        files .gitignore ignores are skipped in a git work tree."""
        folder = confined_dir(path, self.roots)
        names, complete, git = matching_files(folder, pattern, self.roots)
        start = bisect.bisect_right(names, after) if after is not None else 0
        shown = names[start : start + limit]
        lines = []
        for rel in shown:
            try:
                lines.append(card_for(os.path.join(folder, rel), name=rel).render())
            except CardError as exc:
                lines.append(f"[unreadable] name={quote(rel)} | {quote(str(exc))}")
        notes = []
        if git:
            notes.append("a git work tree: files .gitignore ignores are left out")
        if not complete:
            notes.append(f"looked at the first {MAX_SCANNED:,} paths only; narrow the pattern")
        more = start + limit < len(names)
        return {
            "path": folder,
            "pattern": pattern,
            "files": lines,
            "total_files": len(names) if complete else None,
            "notes": notes,
            "next": (
                f"file_list(path={json.dumps(folder)}, pattern={json.dumps(pattern)}, "
                f"limit={limit}, after={json.dumps(shown[-1])})"
                if more and shown
                else None
            ),
        }

    # archives

    def _member_path(self, path: str, member: str | None) -> str:
        """``path`` itself, or the extracted copy of ``member`` of the archive at ``path``."""
        if member is None:
            return path
        with open_confined(path, self.roots) as f:
            return extract_member(f, member, self.members_dir)

    def archive_list(
        self,
        path: Annotated[
            str,
            Field(
                description="Archive (zip, tar, tar.gz, gz, bz2, xz), absolute or relative to "
                "the first root."
            ),
        ],
        prefix: Annotated[
            str, Field(max_length=4096, description="Only entries whose name starts with this.")
        ] = "",
        limit: Annotated[int, Field(ge=1, le=2000, description="Most entries to return.")] = 200,
    ) -> dict[str, Any]:
        """List the entries of an archive (name, type, size); read one with member= on the
        file tools."""
        with open_confined(path, self.roots) as f:
            return list_archive(f, prefix, limit)

    # documents

    def _document(self, f: OpenFile) -> str:
        kinds = "docx, pptx, odt, odp, epub, html, markdown"
        return _card_fact(f, "document", f"a document ({kinds})")[0]

    def doc_read(
        self,
        path: DocPath,
        part: Annotated[
            str,
            Field(
                pattern=r"^\s*\d+\s*(-\s*\d+\s*)?$",
                description='Parts "N" or "A-B": paragraphs or tables (docx, odt, html, '
                "markdown), slides (pptx, odp), chapters (epub).",
            ),
        ] = "1-20",
        member: Member = None,
    ) -> dict[str, Any]:
        """Read a range of a document's parts (paragraphs, slides or chapters), headings marked
        with #, tables as | rows; at most 40,000 chars per call, with a `next` call."""
        path = self._member_path(path, member)
        first, last = parse_rows(part)
        with open_confined(path, self.roots) as f:
            fmt = self._document(f)
            parts: list[dict[str, Any]] = []
            chars = 0
            number = 0
            more: bool | None = False
            notes: list[str] = []
            reader = contextlib.closing(iter_parts(f, fmt, first))
            try:
                with reader as produced:
                    for number, text in enumerate(produced, start=1):
                        if number < first:
                            continue
                        if number > last or (parts and chars + len(text) > MAX_PDF_READ_CHARS):
                            more = True
                            break
                        parts.append({"part": number, "text": text})
                        chars += len(text)
            except WrongFileTypeError as exc:
                if not parts:
                    raise
                notes.append(f"stopped after part {parts[-1]['part']}: {exc}")
                more = None  # unknown: the rest cannot be read
            if not parts and first > 1:
                raise InvalidArgumentError(
                    f"part {first} is past the end: the document has {number} parts"
                )
            nxt = None
            if more and parts:
                start = parts[-1]["part"] + 1
                width = max(last - first + 1, 1)
                nxt = f'doc_read(path={json.dumps(f.path)}, part="{start}-{start + width - 1}")'
            return {
                "path": f.path,
                "format": fmt,
                "parts": parts,
                "total_parts": number if more is False else None,
                "notes": notes,
                "next": nxt,
            }

    def doc_search(
        self,
        path: DocPath,
        query: WordsQuery,
        limit: Annotated[int, Field(ge=1, le=50, description="Most parts to return.")] = 10,
    ) -> dict[str, Any]:
        """Find the parts of a document (paragraphs, slides, chapters) that best match words
        or a phrase, with snippets; the first search indexes the file."""
        with open_confined(path, self.roots) as f:
            fmt = self._document(f)
            file_id, total, indexed_now = self._pages.ensure_parts(f, lambda: iter_parts(f, fmt))
            hits = [
                {"part": h["page"], "score": h["score"], "snippet": h["snippet"]}
                for h in self._pages.search(file_id, query, limit)
            ]
            return {
                "path": f.path,
                "format": fmt,
                "query": query,
                "parts": total,
                "indexed_now": indexed_now,
                "hits": hits,
                "next": (
                    f'doc_read(path={json.dumps(f.path)}, part="{hits[0]["part"]}")'
                    if hits
                    else None
                ),
            }

    # tables

    def _table(self, f: OpenFile) -> TableFile:
        fmt, facts = _card_fact(f, "table", "a table (CSV, TSV, xlsx, xlsm, ods, Parquet)")
        return TableFile(f, fmt, str(facts.get("delimiter", ",")))

    def table_read(
        self,
        path: TablePath,
        sheet: SheetName = None,
        rows: Annotated[
            str,
            Field(
                pattern=r"^\s*\d+\s*(-\s*\d+\s*)?$",
                description='Rows "N" or "A-B" as numbered in the file (CSV line, sheet row).',
            ),
        ] = "1-50",
        columns: Annotated[
            list[str] | None,
            Field(max_length=200, description="Only these columns, by header name."),
        ] = None,
        member: Member = None,
    ) -> dict[str, Any]:
        """Read a range of rows of a table file as a grid with row numbers (at most 200 rows).

        Returns ``columns`` (``"row"`` then the header names), ``rows`` (each starting with
        its row number), ``total_rows`` (once known), ``notes`` and ``next``.
        """
        path = self._member_path(path, member)
        first, last = parse_rows(rows)
        with open_confined(path, self.roots) as f:
            table = self._table(f)
            if table.format in ("csv", "tsv"):
                if sheet is not None:
                    raise InvalidArgumentError(f"{f.path!r} is {table.format}: it has no sheets")
                with self._text_view(f) as (text, shown):
                    index = LineIndex(text, self._lines_dir, shown_path=shown)
                    return read_csv_rows(table, index, first, last, columns)
            if table.format == "parquet":
                if sheet is not None:
                    raise InvalidArgumentError(f"{f.path!r} is Parquet: it has no sheets")
                return read_parquet_rows(table, first, last, columns)
            return read_sheet_rows(table, sheet, first, last, columns)

    def table_query(
        self,
        path: TablePath,
        sql: Annotated[
            str,
            Field(
                min_length=1,
                max_length=10_000,
                description="One SELECT over the view t, e.g. "
                '"SELECT region, sum(amount) FROM t GROUP BY region".',
            ),
        ],
        sheet: SheetName = None,
    ) -> dict[str, Any]:
        """Run one read-only SQL SELECT (DuckDB) over a table file registered as the view t.

        At most 200 result rows come back, with a note when there were more.
        """
        with open_confined(path, self.roots) as f:
            table = self._table(f)
            cache = os.path.join(self.home, "tables")
            if table.format in ("xlsx", "ods"):
                return query_table(table, sql, cache, sheet=sheet)
            if sheet is not None:
                raise InvalidArgumentError(f"{f.path!r} is {table.format}: it has no sheets")
            if table.format in ("csv", "tsv") and encoding_of(f) is not None:
                with self._text_view(f) as (text, _):
                    return query_table(TableFile(text, table.format, table.delimiter), sql, cache)
            return query_table(table, sql, cache)

    # the capability index: a lean start for many tools

    @property
    def capabilities(self) -> CapabilityIndex:
        """Every tool this workspace can hand out: its own, then those of `register_tools`."""
        if self._capabilities is None:
            own = [t for t in tool_schemas("mcp") if t["name"] not in META_TOOLS]
            self._capabilities = CapabilityIndex(own, server="leanreplay")
        return self._capabilities

    def register_tools(self, server: str, tools: Iterable[object]) -> list[str]:
        """Add another server's tool definitions (MCP, OpenAI or Anthropic form, or SDK
        objects) to the capability index; returns the names they are exposed under."""
        return self.capabilities.add(tools, server=server)

    def request_tools(self, conversation_id: str | None = None, format: str = "mcp") -> list[Any]:
        """The tools list for the next request: `tool_search`, `tool_activate`, then every
        tool the conversation has activated, in activation order."""
        meta = [t for t in tool_schemas(format) if _schema_name(t) in META_TOOLS]
        return meta + self.capabilities.schemas(self.active_tools(conversation_id), format)

    def active_tools(self, conversation_id: str | None = None) -> list[str]:
        """Names of the tools the conversation has activated, in activation order."""
        return [n for n in self._activations.get(conversation_id) if n in self.capabilities]

    def tool_search(
        self,
        query: WordsQuery,
        limit: Annotated[int, Field(ge=1, le=20, description="Most tools to return.")] = 5,
    ) -> dict[str, Any]:
        """Find tools by what they do; returns names and summaries to pass to tool_activate."""
        hits = self.capabilities.search(query, limit)
        return {"query": query, "tools": hits}

    def tool_activate(
        self,
        names: Annotated[
            list[str],
            Field(
                min_length=1,
                max_length=20,
                description="Exact tool names, as tool_search or the tool index shows them.",
            ),
        ],
    ) -> dict[str, Any]:
        """Make tools callable from the next request on; returns their full schemas."""
        for name in names:
            self.capabilities.get(name)  # an unknown name fails before anything is kept
        conversation_id = current_conversation()
        if conversation_id is not None:
            conversation_id = check_id("conversation_id", conversation_id)
        try:
            new, old = self._activations.add(conversation_id, names)
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        return {
            "activated": new,
            "already_active": old,
            "tools": self.capabilities.schemas(new, "mcp"),
        }


def _schema_name(schema: Mapping[str, Any]) -> str:
    function = schema.get("function")
    return str(function["name"] if isinstance(function, Mapping) else schema["name"])


def _card_fact(f: OpenFile, fact: str, kind: str) -> tuple[str, Mapping[str, Any]]:
    """The card fact that makes ``f`` a ``kind`` (its format), and all its facts; a file
    without it is refused with the tools that do read it."""
    card = card_for_descriptor(f.fd, path=f.path, light=True)
    value = card.facts.get(fact)
    if value is None:
        raise WrongFileTypeError(
            f"{f.path!r} is {card.mime}, not {kind}; "
            f"read it with {', '.join(card.tools) or 'no tool'}"
        )
    return str(value), card.facts
