"""`Workspace`: the facade over the store, the index and the tools.

Each method checks what the caller may see (conversations, roots) and makes one call into a
room: the conversation lifecycle (`lifecycle`), the store (`store`), the readers (`tools`) or
the indexes (`search`). Every model-facing tool is a method marked `@tool`; their order here
is the order in which they are listed everywhere (`TOOL_NAMES`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import Field

from leanreplay.placeholders import (
    CompactionResult,
    FoldPolicy,
    OfflineSummarizer,
    ReplayPolicy,
    ReplayResult,
    Summarizer,
    check_int,
    read_call,
)

from ._errors import ConversationNotFoundError, InvalidArgumentError, NotFoundError, StoreError
from ._limits import MAX_ANSWER_CHARS
from ._tools import (
    ToolSpec,
    call_tool,
    current_conversation,
    current_progress,
    schemas,
    tool,
    tools_of,
)
from .lifecycle._conversations import SNAPSHOTS_KEPT, Conversations
from .lifecycle._fold import FoldResult, SizePoint
from .search._capabilities import CapabilityIndex
from .search._convindex import MessageIndex
from .search._filetools import read_pdf, search_document, search_pdf
from .search._pdfindex import PageIndex
from .search._pgsearch import PgMessageSearch
from .store._home import mark_home
from .store._ingest import IngestReport, ingest_paths
from .store._open import open_store
from .store._pages import read_original
from .store._store import ConversationInfo, ConversationStats, check_id
from .tools._archives import extract_member, list_archive, member_sources
from .tools._docs import read_parts
from .tools._images import view_image
from .tools._kinds import CacheDirs
from .tools._lines import MAX_READ_LINES, find_in_text, read_text
from .tools._listing import list_folder
from .tools._paths import Roots, admitted, open_confined, resolve_roots, root_notices
from .tools._pdfread import pdf_info
from .tools._pdftext import ProgressCallback
from .tools._tables import query_table_file, read_table

__all__ = [
    "META_TOOLS",
    "SNAPSHOTS_KEPT",
    "TOOL_NAMES",
    "FoldResult",
    "SizePoint",
    "Workspace",
    "tool_schemas",
]

# Roots of the `Workspace.call` running in this thread or task, when it names its own.
_call_roots: ContextVar[Roots | None] = ContextVar("leanreplay_roots", default=None)

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
        store: where the conversations are kept: None (or ``"sqlite"``) for the embedded
            SQLite store in the home, or a ``postgresql://USER@HOST:PORT/DATABASE`` URL for a
            PostgreSQL database shared by a fleet of workers (the home then keeps only this
            machine's caches); the CLI's ``--store`` and ``$LEANREPLAY_STORE``.
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
        store: str | None = None,
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
        self._store = open_store(self.home, store)
        self.store_url = store or None  # the shared store's URL; None: the home's SQLite
        self._life = Conversations(
            self._store,
            self.home,
            fold_policy=fold_policy or FoldPolicy(),
            summarizer=summarizer or OfflineSummarizer(),
            auto_fold=auto_fold,
        )
        self._dirs = CacheDirs(self.home)
        self._page_index: PageIndex | None = None
        self._message_index: MessageIndex | PgMessageSearch | None = None
        self._capabilities: CapabilityIndex | None = None
        self._activations = self._store.activations(os.path.join(self.home, "activations"))

    # The lifecycle's settings, settable on the workspace as before.

    @property
    def fold_policy(self) -> FoldPolicy:
        return self._life.fold_policy

    @fold_policy.setter
    def fold_policy(self, value: FoldPolicy) -> None:
        self._life.fold_policy = value

    @property
    def summarizer(self) -> Summarizer:
        return self._life.summarizer

    @summarizer.setter
    def summarizer(self, value: Summarizer) -> None:
        self._life.summarizer = value

    @property
    def auto_fold(self) -> bool:
        return self._life.auto_fold

    @auto_fold.setter
    def auto_fold(self, value: bool) -> None:
        self._life.auto_fold = value

    def _attachment_gate(self, real: str, shown: str) -> None:
        if self.allowed is not None and not self.allowed & self._store.attachment_owners(
            os.path.basename(real)
        ):
            raise NotFoundError(f"no file at {shown!r}; check the name")

    def _member_gate(self, real: str, shown: str) -> None:
        # A member is read as its archive is: only by whoever may read one of the archives it
        # was extracted from (an attachment of an allowed conversation, or a file in the roots).
        members = os.path.realpath(self.members_dir)
        if real == members:
            return  # the folder itself: each member in it is gated
        own = os.path.join(members, os.path.relpath(real, members).split(os.sep, 1)[0])
        sources = [s for s in member_sources(members, real) if not s.startswith(own + os.sep)]
        if not any(admitted(source, self.roots) for source in sources):
            raise NotFoundError(f"no file at {shown!r}; check the name")

    def _resolve(self, roots: Iterable[str | os.PathLike[str]]) -> Roots:
        # Saved attachments are readable by the file tools, whatever roots were given, but only
        # those of the allowed conversations, and archive members extracted for the tools only
        # by whoever may read their archive; nothing else of the home is ever served.
        saved = [d for d in (self.attachments_dir, self.members_dir) if os.path.isdir(d)]
        return Roots(
            resolve_roots([*(os.path.expanduser(os.fspath(r)) for r in roots), *saved]),
            private=[os.path.realpath(self.home)],
            gates={
                os.path.realpath(self.attachments_dir): self._attachment_gate,
                os.path.realpath(self.members_dir): self._member_gate,
            },
        )

    @property
    def roots(self) -> Roots:
        """The folders the file tools read: those given, or those of the current `call`."""
        override = _call_roots.get()
        return self._roots if override is None else override

    def close(self) -> None:
        self._life.wait_for_folds()  # a fold behind an append finishes with its own store
        self._store.close()
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

    def conversations(self, prefix: str | None = None) -> list[str]:
        """Ids of the stored conversations this workspace may see (only those starting with
        ``prefix``, when given), sorted."""
        ids = self._store.conversation_ids(prefix)
        return [i for i in ids if self.allowed is None or i in self.allowed]

    def info(self, conversation_id: str) -> ConversationInfo:
        """Source, format, importer notes and message count of a conversation."""
        return self._store.info(self._visible(conversation_id))

    def ingest(
        self,
        *paths: str | os.PathLike[str],
        format: str = "auto",
        conversation_id: str | None = None,
        errors: Literal["raise", "report"] = "raise",
        progress: Callable[[int, int, str], None] | None = None,
        fold: bool = True,
    ) -> IngestReport:
        """Import agent logs (see `LOG_FORMATS`): files, globs and folders (every file with a log
        suffix under it, recursively, in sorted order). A Claude Code project folder gives
        every session.

        Re-importing a log that has grown appends only the new messages; a log that no
        longer matches what is stored under its id is refused. Iterating the returned report
        gives the conversation ids; ``report.files`` says per file whether it was imported,
        appended, unchanged, refused (with the reason) or skipped (in a folder, no log format).

        Python's cyclic garbage collector is paused while it runs (for the whole process: a
        log's messages hold no cycles, and walking a million of them cost a third of the
        import); it is back on after, if it was on before.

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
        return ingest_paths(
            self._store,
            paths,
            format=format,
            conversation_id=conversation_id,
            errors=errors,
            progress=progress,
            allowed=self.allowed,
            attachments_dir=self.attachments_dir,
            fold=self._life.fold_added if fold and self.auto_fold else None,
        )

    def append(self, conversation_id: str, message: Mapping[str, Any] | Any) -> str:
        """Store one message at the end of a conversation (created if new); returns its id.

        ``message`` is a dict in a provider's shape, or a provider SDK object as it came back
        (Anthropic ``Message``, OpenAI ``ChatCompletionMessage``, a Responses output item), or
        a dict holding such objects (``{"role": "assistant", "content": response.content}``):
        anything with ``model_dump`` is stored as its JSON form without ``None`` fields.
        Inline attachments are saved under the home; when the unsummarized part of the
        conversation grows past the fold threshold, the prefix is folded (``auto_fold``).
        """
        return self._life.append(self._visible(conversation_id), message)

    def extend(
        self,
        conversation_id: str,
        messages: Sequence[Mapping[str, Any] | Any],
        *,
        after: int | None = None,
        source: str | None = None,
        format: str | None = None,
    ) -> list[str]:
        """Store several messages at the end of a conversation in one transaction (as
        `append` stores one); returns their ids.

        Args:
            after: store them only if the conversation still holds exactly this many
                messages (0: it is new), else raise `ConversationChangedError` and store
                nothing: how two writers of one conversation never interleave.
            source, format: recorded for a conversation this creates (`info`).
        """
        return self._life.extend(
            self._visible(conversation_id), messages, after=after, source=source, format=format
        )

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        """The stored originals, in order, each with its ``id``."""
        return self._life.messages(self._visible(conversation_id))

    def replay(
        self,
        conversation_id: str,
        policy: ReplayPolicy | None = None,
        *,
        snapshot: bool = False,
        budget_tokens: int | None = None,
        now: float | None = None,
        last_request_at: float | None = None,
    ) -> ReplayResult:
        """The lean replay of a stored conversation: attachments as cards, a folded prefix
        as its summary, stale tool results as placeholders.

        With ``snapshot=True`` (a replay about to be sent to a model) a prompt snapshot is
        recorded: time, size, estimated tokens against ``budget_tokens`` (the input budget,
        if known), placeholders and fold; the home keeps the last `SNAPSHOTS_KEPT`.

        The store's append times say when each past request went out; a request that comes
        more than ``policy.cache_ttl_s`` after the one before it (its cache expired) applies
        every pending stale elision at once and, with the automatic fold on, folds once the
        unsummarized part is over `FoldPolicy.cold_threshold`. ``now`` is when this request
        goes out (default: the newest append), ``last_request_at`` when the previous one did
        (default: from the append times).
        """
        cid = self._visible(conversation_id)
        return self._life.replay(
            cid,
            policy,
            snapshot=snapshot,
            budget_tokens=budget_tokens,
            now=now,
            last_request_at=last_request_at,
        )

    def snapshots(self, conversation_id: str | None = None) -> list[dict[str, Any]]:
        """The prompt snapshots kept in this home (the last `SNAPSHOTS_KEPT`), oldest first;
        only those of ``conversation_id`` when given."""
        if conversation_id is not None:
            return self._life.snapshots(self._visible(conversation_id))
        return self._life.snapshots(allowed=self.allowed)

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
        return self._life.model_call(
            self._visible(conversation_id),
            call,
            context_window=context_window,
            output_reserve=output_reserve,
            reported_input_tokens=reported_input_tokens,
            policy=policy,
            summarizer=summarizer,
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
        return self._life.replay_at_turn(cid, turn, policy)

    # what `leanreplay view` reads: bounded, index-backed views of the store

    def conversation_stats(self, conversation_id: str | None = None) -> list[ConversationStats]:
        """Message count, last position, last id and last write time of each visible
        conversation (or of one), from the store's indexes: fast on millions of messages."""
        if conversation_id is not None:
            return [self._store.stats_of(self._visible(conversation_id))]
        return [s for s in self._store.stats() if self.allowed is None or s.id in self.allowed]

    def message_page(
        self, conversation_id: str, *, before: int | None = None, limit: int = 50
    ) -> list[tuple[int, dict[str, Any]]]:
        """Up to ``limit`` (position, message) pairs just before position ``before`` (the
        tail when None), in order: a page of a conversation of any length."""
        cid = self._visible(conversation_id)
        check_int("limit", limit, minimum=1, error=InvalidArgumentError)
        return [(m.seq, m.message()) for m in self._store.messages_page(cid, before, limit)]

    def message_position(self, conversation_id: str, message_id: str) -> int:
        """The 1-based position of a message in its conversation."""
        cid = self._visible(conversation_id)
        return self._store.message(cid, check_id("message_id", message_id)).seq

    def raw_message(self, conversation_id: str, message_id: str) -> str:
        """A message's stored JSON text, exactly as stored."""
        cid = self._visible(conversation_id)
        return self._store.message(cid, check_id("message_id", message_id)).body

    def stored_chars(self, conversation_id: str, *, after: int = 0) -> int:
        """Content chars of the messages after position ``after`` (sizes kept at append)."""
        return self._store.chars_after(self._visible(conversation_id), after)

    def stored_times(self, conversation_id: str, *, after: int = 0) -> dict[str, float]:
        """When each message after position ``after`` was stored (unix seconds), by message
        id: the ``times`` `replay` reads to know when the provider's cache has expired."""
        return self._store.times(self._visible(conversation_id), after_seq=after)

    def attachment_cards(self, conversation_id: str) -> dict[tuple[str, int], str]:
        """The card of each saved inline attachment, by (message id, block index)."""
        return self._store.attachment_cards(self._visible(conversation_id))

    def turn_count(self, conversation_id: str) -> int:
        """Turns of a conversation: one from its first message, and one more at each later
        genuine user message (the numbering of `replay_at_turn`)."""
        return self._life.turn_count(self._visible(conversation_id))

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
        return self._life.size_series(cid, policy, max_points=max_points)

    # the rolling prefix fold

    def fold(
        self,
        conversation_id: str,
        summarizer: Summarizer | None = None,
        *,
        cache_expired: bool = False,
    ) -> FoldResult:
        """Fold everything before a legal boundary into the conversation's one summary.

        Returns what happened; ``folded`` is False (with the reason) when the unsummarized
        part is under the threshold, no user turn can start the verbatim tail, another fold
        of the conversation is running or won, or the summarizer failed. Originals are never
        edited or deleted. With ``cache_expired=True`` (the next request finds the
        provider's cache expired, as `replay` and the proxy tell) the threshold is
        `FoldPolicy.cold_threshold`.
        """
        cid = self._visible(conversation_id)
        return self._life.fold(cid, summarizer, cache_expired=cache_expired)

    def fold_state(self, conversation_id: str) -> dict[str, Any] | None:
        """The stored summary: ``summary``, ``summarized_through_message`` (its position),
        ``summarized_through_message_id`` and ``generation``; None if never folded."""
        return self._life.fold_state(self._visible(conversation_id))

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
        return self._life.compact_turn(
            messages,
            context_window=context_window,
            output_reserve=output_reserve,
            reported_input_tokens=reported_input_tokens,
            summarizer=summarizer,
            conversation_id=conversation_id,
            force=force,
        )

    def compaction_events(
        self, conversation_id: str | None = None, *, limit: int = 500
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` compaction events of the home's daily logs, oldest first; only
        those of ``conversation_id`` when given."""
        cid = self._visible(conversation_id) if conversation_id is not None else None
        return self._life.compaction_events(cid, limit=limit, allowed=self.allowed)

    # tools: each is one `@tool` method; the order here is the order they are listed in

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

    @property
    def _pages(self) -> PageIndex:
        if self._page_index is None:
            self._page_index = PageIndex(self.home)
        return self._page_index

    @property
    def _messages_index(self) -> MessageIndex | PgMessageSearch:
        if self._message_index is None:
            self._message_index = (
                PgMessageSearch(self._store)
                if self._store.kind == "postgresql"
                else MessageIndex(self.home, self._store)
            )
        return self._message_index

    def _member_path(self, path: str, member: str | None) -> str:
        """``path`` itself, or the extracted copy of ``member`` of the archive at ``path``."""
        if member is None:
            return path
        with open_confined(path, self.roots) as f:
            return extract_member(f, member, self.members_dir)

    @tool
    def pdf_info(
        self,
        path: PdfPath,
    ) -> dict[str, Any]:
        """Show a PDF's facts (pages, version, encryption), its metadata and top-level outline."""
        with open_confined(path, self.roots) as f:
            return pdf_info(f)

    @tool
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
            return search_pdf(self._pages, f, query, limit, current_progress())

    @tool
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
        with open_confined(path, self.roots) as f:
            return read_pdf(lambda: self._pages, f, pages)

    @tool
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
        with open_confined(path, self.roots) as f:
            return read_text(f, start_line, end_line, self._dirs)

    @tool
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
        with open_confined(path, self.roots) as f:
            return find_in_text(
                f, query, limit, self._dirs, ignore_case=ignore_case, start_line=start_line
            )

    @tool
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

    @tool
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
        with open_confined(path, self.roots) as f:
            return read_table(f, sheet, rows, columns, self._dirs)

    @tool
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
            return query_table_file(f, sql, sheet, self._dirs)

    @tool
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
        with open_confined(path, self.roots) as f:
            return read_parts(f, part)

    @tool
    def doc_search(
        self,
        path: DocPath,
        query: WordsQuery,
        limit: Annotated[int, Field(ge=1, le=50, description="Most parts to return.")] = 10,
    ) -> dict[str, Any]:
        """Find the parts of a document (paragraphs, slides, chapters) that best match words
        or a phrase, with snippets; the first search indexes the file."""
        with open_confined(path, self.roots) as f:
            return search_document(self._pages, f, query, limit)

    @tool
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

    @tool
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
        include_ignored: Annotated[
            bool, Field(description="Also list the files .gitignore ignores.")
        ] = False,
    ) -> dict[str, Any]:
        """List the files under a folder as one-line cards, sorted by path, with a `next` call;
        files .gitignore ignores are skipped in a git work tree (a note says how many)."""
        return list_folder(path, pattern, limit, after, self.roots, include_ignored=include_ignored)

    @tool
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
                le=MAX_ANSWER_CHARS,
                description=f"Longest answer to return; at most {MAX_ANSWER_CHARS:,}.",
            ),
        ] = MAX_ANSWER_CHARS,
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
        return read_original(
            self._store, cid, mid, tool_call_id, part, offset, max_chars, self.attachments_dir
        )

    @tool
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

    @tool(meta=True)
    def tool_search(
        self,
        query: WordsQuery,
        limit: Annotated[int, Field(ge=1, le=20, description="Most tools to return.")] = 5,
    ) -> dict[str, Any]:
        """Find tools by what they do; returns names and summaries to pass to tool_activate."""
        hits = self.capabilities.search(query, limit)
        return {"query": query, "tools": hits}

    @tool(meta=True)
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
        """Make tools callable from the next request on (or at once through tool_call);
        returns their full schemas."""
        for name in names:
            self.capabilities.get(name)  # an unknown name fails before anything is kept
        conversation_id = current_conversation()
        if conversation_id is not None:
            conversation_id = check_id("conversation_id", conversation_id)
        try:
            new, old = self._activations.add(conversation_id, names)
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        # Every name asked for, active before or not: a client whose tools list stays fixed
        # reads the schemas here and calls the tools through tool_call.
        return {
            "activated": new,
            "already_active": old,
            "tools": self.capabilities.schemas(list(dict.fromkeys(names)), "mcp"),
        }

    @tool(meta=True)
    def tool_call(
        self,
        name: Annotated[
            str, Field(description="Exact name of an activated tool, as tool_activate gave it.")
        ],
        arguments: Annotated[
            dict[str, Any],
            Field(description="The tool's arguments, as its schema from tool_activate says."),
        ],
    ) -> Any:
        """Call an activated tool by name with its arguments, without it in the tools list;
        returns what the tool returns."""
        capability = self.capabilities.get(name)
        conversation_id = current_conversation()
        if name not in self.active_tools(conversation_id):
            raise InvalidArgumentError(
                f"{name} is not active yet; call tool_activate with names=[{name!r}] first"
            )
        if capability.server != _OWN_SERVER:
            raise InvalidArgumentError(
                f"{name} is a tool of server {capability.server!r}, which this workspace does "
                "not connect to; only the lean-start gateway in front of that server forwards it"
            )
        return self.call(
            capability.original_name,
            arguments,
            progress=current_progress(),
            conversation_id=conversation_id,
        )

    # the capability index: a lean start for many tools

    @property
    def _tools(self) -> Mapping[str, ToolSpec]:
        return tools_of(type(self))

    @property
    def capabilities(self) -> CapabilityIndex:
        """Every tool this workspace can hand out: its own, then those of `register_tools`."""
        if self._capabilities is None:
            own = schemas((t for t in self._tools.values() if not t.meta), "mcp")
            self._capabilities = CapabilityIndex(own, server=_OWN_SERVER, reserved=META_TOOLS)
        return self._capabilities

    def register_tools(self, server: str, tools: Iterable[object]) -> list[str]:
        """Add another server's tool definitions (MCP, OpenAI or Anthropic form, or SDK
        objects) to the capability index; returns the names they are exposed under."""
        return self.capabilities.add(tools, server=server)

    def request_tools(self, conversation_id: str | None = None, format: str = "mcp") -> list[Any]:
        """The tools list for the next request: `tool_search`, `tool_activate`, `tool_call`,
        then every tool the conversation has activated, in activation order (a client that
        keeps its tools list fixed sends only the first three and calls the activated tools
        through `tool_call`, so activating never rewrites its prompt cache)."""
        meta = schemas((t for t in self._tools.values() if t.meta), format)
        return meta + self.capabilities.schemas(self.active_tools(conversation_id), format)

    def active_tools(self, conversation_id: str | None = None) -> list[str]:
        """Names of the tools the conversation has activated, in activation order."""
        return [n for n in self._activations.get(conversation_id) if n in self.capabilities]


_OWN_SERVER = "leanreplay"  # the capability index's name for the workspace's own tools
# The model-facing tools, in the order they are listed (the order of their definitions above).
TOOL_NAMES: tuple[str, ...] = tuple(tools_of(Workspace))
# The capability index's own tools: always in the request, never in the index.
META_TOOLS: frozenset[str] = frozenset(n for n, t in tools_of(Workspace).items() if t.meta)


def tool_schemas(
    format: str = "mcp", *, workspace: type[Workspace] | Workspace = Workspace
) -> list[dict[str, Any]]:
    """Schemas of every tool for function calling: ``openai`` (Chat Completions),
    ``openai-responses`` (Responses API function tools), ``anthropic`` or ``mcp``.

    ``workspace`` is a `Workspace` subclass (or an instance of one) with tools of its own.
    """
    cls = workspace if isinstance(workspace, type) else type(workspace)
    return schemas(tools_of(cls).values(), format)
