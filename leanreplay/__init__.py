"""leanreplay: keep what an agent runtime replays to its model lean, without losing a byte.

    >>> from leanreplay import Workspace, card_for, replay
    >>> card_for("report.pdf").render()          # one line: name, path, type, size, facts
    >>> with Workspace("~/.local/share/leanreplay") as ws:
    ...     ws.append("c1", {"role": "user", "content": "Why did the build fail?"})
    ...     ws.replay("c1").messages             # placeholders, cards and the fold applied

The three rooms are subpackages: `leanreplay.cards` (attachment cards),
`leanreplay.placeholders` (the pure replay transformer, windows, fold and compactor) and
`leanreplay.index` (the store, the search index, the tools and the faces). This module
re-exports what most programs need; everything else is public in its room.
"""

from importlib import metadata as _metadata

from .cards import Card, CardError, card_for
from .index import (
    TOOL_NAMES,
    ConversationInfo,
    FoldResult,
    IngestReport,
    Workspace,
    WorkspaceError,
    tool,
    tool_schemas,
)
from .placeholders import (
    CallableSummarizer,
    FoldPolicy,
    InvalidPolicyError,
    OfflineSummarizer,
    PairWindow,
    PlaceholderError,
    ReplayPolicy,
    ReplayResult,
    Summarizer,
    check_pairing,
    compact_turn,
    for_provider,
    last_turns,
    parse_read_call,
    replay,
)

try:
    __version__ = _metadata.version("leanreplay")
except _metadata.PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = [
    "CallableSummarizer",
    "Card",
    "CardError",
    "ConversationInfo",
    "FoldPolicy",
    "FoldResult",
    "IngestReport",
    "InvalidPolicyError",
    "OfflineSummarizer",
    "PairWindow",
    "PlaceholderError",
    "ReplayPolicy",
    "ReplayResult",
    "Summarizer",
    "TOOL_NAMES",
    "Workspace",
    "WorkspaceError",
    "__version__",
    "card_for",
    "check_pairing",
    "compact_turn",
    "for_provider",
    "last_turns",
    "parse_read_call",
    "replay",
    "tool",
    "tool_schemas",
]
