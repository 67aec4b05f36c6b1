"""Which stored conversation a request continues, what of it is new, and the lean body sent
upstream in its place.

Every request carries the client's whole history. The proxy keeps no state of its own: the
store is the only memory, so any worker on the same store answers any request.

**Mapping.** A request names its conversation's family by an id the client gives (the
``x-leanreplay-conversation`` header, Claude Code's session id), or else by the digest of
its first message. Inside a family, a conversation is the stored history the request
extends: its messages, as the client holds them, are the request's first ones. A request that
extends none (an edit, a rewind, a subagent of the same session) starts a conversation of
its own, named after the digest of the request's history up to the first message that
differs (``<family>~<digest>``), so later requests find it from their own digests without
reading the others. Nothing stored is ever changed.

**The client's view.** Stored messages are what the client sent, plus the proxy's own
retrieval rounds, marked with a `PROXY_KEY` record; a round's group records the message(s)
the client received instead (``view``), which is what the client will send back.

**The lean body.** The stored messages, the client's ones in the bytes of this request,
go through the library's replay (cards for inline attachments, the fold, placeholders);
every message the replay left unchanged is copied from the client's text byte for byte, a
changed one is spliced (only its changed blocks are serialised), and the proxy's own
messages are serialised deterministically. The system prompt, the tools and every other
field keep the client's bytes; our tools are appended after the client's.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from leanreplay.placeholders import (
    ReplayPolicy,
    ReplayResult,
    cache_expired,
    check_pairing,
    content_chars,
    folded_prefix,
    replay,
)

from ..._errors import ConversationChangedError, ConversationNotFoundError
from ..._workspace import TOOL_NAMES, Workspace
from ...store._attachments import inline_blocks
from ._api import Api, ClientRequest
from ._jsontext import dumps, replace_spans, splice, without_key

__all__ = [
    "FAMILY_HEADER",
    "PROXY_KEY",
    "Known",
    "Lean",
    "Match",
    "build",
    "conversation_of",
    "digests",
    "family",
]

PROXY_KEY = "proxy"  # bookkeeping of the proxy's own messages (never sent upstream)
FAMILY_HEADER = "x-leanreplay-conversation"
SOURCE = "proxy"  # the source of the conversations the proxy stores (`info`)
FORK = "~"
DIGEST_CHARS = 16
MAX_CANDIDATES = 4  # conversations read to find the one a request extends, at most
MAX_ATTEMPTS = 5  # re-reads when another request of the same conversation stored first
KNOWN_CONVERSATIONS = 16  # conversations a process keeps parsed between requests (memory)
KNOWN_TAIL = 64  # messages stored since a kept copy that are read alone, at most
BOOKKEEPING = frozenset({"id", PROXY_KEY, "block_ids", "meta", "stub", "api_message_id"})
_READERS = re.compile(r"\| read with: ([a-z_]+(?:, [a-z_]+)*)(?: \| warnings: .*)?$")
# Fields a client may drop or leave null when it sends back an answer it was given.
_ECHOED = frozenset(
    {"status", "annotations", "logprobs", "refusal", "audio", "function_call", "citations", "id"}
)


# --- digests and families -------------------------------------------------------------------


def digests(request: ClientRequest) -> list[str]:
    """The running digest of the request's history after each message: over the client's
    own text of each message, ``cache_control`` members left out (clients move their
    breakpoints from request to request). The messages it holds of an earlier request
    (`ClientRequest.like`) are not hashed again."""
    like = request.like
    states: list[Any] = []
    if like is not None and len(like.hashes) >= request.reused:
        states = like.hashes[: request.reused]
    h = states[-1][0].copy() if states else hashlib.sha256()
    text = request.text
    for n in range(len(states), len(request.messages)):
        start, end = request.spans[n]
        value = request.messages[n]
        h.update(without_key(text, start, end, value, "cache_control").encode("utf-8", "replace"))
        h.update(b"\x1e")
        state = h.copy()
        states.append((state, state.hexdigest()[:DIGEST_CHARS]))
    if not request.hashes:
        request.hashes.extend(states)  # one call: a reader in another thread sees all or none
    return [digest for _, digest in states]


def family(api: Api, request: ClientRequest, header: str | None, chain: Sequence[str]) -> str:
    """The id the request's conversations start with."""
    if header:
        return header
    session = api.session(request)
    if session:
        return session
    return f"proxy-{api.name}-{chain[0]}"


# --- the client's view of what is stored ----------------------------------------------------


def views(stored: Sequence[Mapping[str, Any]]) -> list[tuple[Any, int | None]]:
    """What the client holds for the stored messages, in order: each client message as it is
    (with the index of its stored message), and the view of each group of the proxy's own
    messages (index None)."""
    out: list[tuple[Any, int | None]] = []
    i = 0
    while i < len(stored):
        mark = stored[i].get(PROXY_KEY)
        if not isinstance(mark, Mapping):
            out.append((stored[i], i))
            i += 1
            continue
        group = mark.get("response")
        j = i
        while j < len(stored):
            other = stored[j].get(PROXY_KEY)
            if not (isinstance(other, Mapping) and other.get("response") == group):
                break
            j += 1
        last = stored[j - 1][PROXY_KEY]
        out += [(v, None) for v in last.get("view") or ()]
        i = j
    return out


def _strict(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


def _loose(value: Any, client: Any) -> Any:
    """``value`` with what a client may change about an answer it was given evened out:
    null and empty echoed fields, ``cache_control``, and echoed fields it left out."""
    if isinstance(value, dict):
        theirs = client if isinstance(client, dict) else {}
        out = {}
        for key, item in value.items():
            if key == "cache_control" or item is None or (item == [] and key in _ECHOED):
                continue
            if key in _ECHOED and key not in theirs:
                continue
            if key == "index" and "function" in value:
                continue  # streamed tool calls carry their position
            out[key] = _loose(item, theirs.get(key))
        return out
    if isinstance(value, list):
        others = client if isinstance(client, list) else []
        return [_loose(v, others[n] if n < len(others) else None) for n, v in enumerate(value)]
    return value


def same(client: Any, ours: Any, *, loose: bool) -> bool:
    """Whether the client's message is the stored one (or, ``loose``, the view it was given)."""
    if isinstance(ours, dict) and isinstance(client, dict):
        ours = {k: v for k, v in ours.items() if k != PROXY_KEY and (k != "id" or "id" in client)}
    if client == ours:
        return True
    if loose:
        return bool(_loose(client, ours) == _loose(ours, client))
    return bool(_strict(client) == _strict(ours))


# --- matching ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Known:
    count: int
    last_id: str | None
    stored: list[dict[str, Any]]
    chain: list[str]  # the digests of the request that last matched it
    shown: list[tuple[Any, int | None]]  # views(stored), made when kept (off a request's path)


class Known:
    """Stored conversations this process read lately, each with the digests of the request
    that matched it: a cache, never trusted without the store's own count and last id, so
    another worker's append makes it read the store again."""

    def __init__(self, limit: int = KNOWN_CONVERSATIONS) -> None:
        self.limit = limit
        self._entries: OrderedDict[str, _Known] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, ws: Workspace, cid: str) -> tuple[list[dict[str, Any]], list[str]]:
        """The stored messages of ``cid`` and the digests known to match them. When the
        store holds a few more than the copy (another request's write, this process's own
        just before it kept its copy), only those are read: stored messages never change."""
        (stats,) = ws.conversation_stats(cid)
        with self._lock:
            entry = self._entries.get(cid)
        if entry is None:
            return ws.messages(cid), []
        if (entry.count, entry.last_id) == (stats.messages, stats.last_id):
            return entry.stored, entry.chain
        more = stats.messages - entry.count
        if entry.stored and 0 < more <= KNOWN_TAIL:
            # The copy's last message too, to check that the store still continues it.
            page = ws.message_page(cid, limit=more + 1)
            if (
                [at for at, _ in page] == list(range(entry.count, stats.messages + 1))
                and page[0][1] == entry.stored[-1]
                and page[-1][1].get("id") == stats.last_id
            ):
                return [*entry.stored, *(m for _, m in page[1:])], entry.chain
        return ws.messages(cid), []

    def views(self, cid: str, stored: list[dict[str, Any]]) -> list[tuple[Any, int | None]]:
        """`views` of ``stored``: the kept copy's when ``stored`` is that copy."""
        with self._lock:
            entry = self._entries.get(cid)
        return entry.shown if entry is not None and entry.stored is stored else views(stored)

    def keep(self, cid: str, stored: list[dict[str, Any]], chain: Sequence[str]) -> None:
        last = stored[-1].get("id") if stored else None
        entry = _Known(
            len(stored), last if isinstance(last, str) else None, stored, list(chain), views(stored)
        )
        with self._lock:
            self._entries[cid] = entry
            self._entries.move_to_end(cid)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)


@dataclass
class Match:
    """The conversation a request continues."""

    conversation_id: str
    stored: list[dict[str, Any]]  # every stored message, the request's new ones included
    owners: dict[str, int]  # stored message id -> index of the request message it is
    added: int  # messages this request stored
    created: bool  # the conversation is new
    assigned: frozenset[str] = frozenset()  # ids of new messages the store will assign
    pending: Callable[[], None] | None = None  # the write still to do, when deferred

    @property
    def held(self) -> int:
        """How many of ``stored`` the store held before this request (its new ones follow)."""
        return len(self.stored) - self.added


def _common(
    request: ClientRequest,
    stored: Sequence[Mapping[str, Any]],
    chain: Sequence[str] = (),
    seen: Sequence[str] = (),
    shown: list[tuple[Any, int | None]] | None = None,
) -> tuple[int, bool, dict[str, int]]:
    """How many of the request's messages the stored view holds, whether the request
    extends all of it, and the stored id of each request message it holds. ``seen`` is the
    digest chain of an earlier request already found to match: where this request's chain
    agrees with it, its messages are the same bytes and are not compared again."""
    if shown is None:
        shown = views(stored)
    owners: dict[str, int] = {}
    agreed = len(seen)
    if not (agreed and agreed <= len(chain) and chain[agreed - 1] == seen[agreed - 1]):
        agreed = 0
    n = 0
    for (view, index), message in zip(shown, request.messages, strict=False):
        if n >= agreed and not same(message, view, loose=index is None):
            return n, False, owners
        if index is not None:
            mid = stored[index].get("id")
            if isinstance(mid, str):
                owners[mid] = n
        n += 1
    return n, len(shown) <= len(request.messages), owners


def _candidates(ws: Workspace, base: str, chain: Sequence[str]) -> list[str]:
    at = {d: k for k, d in enumerate(chain, 1)}
    scored: list[tuple[int, str]] = []
    for cid in ws.conversations(prefix=base):
        if cid == base:
            scored.append((0, cid))
        elif cid.startswith(base + FORK):
            tag = cid[len(base) + len(FORK) :].split(".", 1)[0]
            if tag in at:
                scored.append((at[tag], cid))
    scored.sort(reverse=True)
    return [cid for _, cid in scored]


def conversation_of(
    ws: Workspace,
    request: ClientRequest,
    base: str,
    chain: Sequence[str],
    *,
    format: str | None = None,
    known: Known | None = None,
    defer: bool = False,
) -> Match:
    """Find (or start) the conversation the request continues and store what is new in it.

    With ``defer``, a continued conversation's new messages may be left to store later:
    ``Match.pending`` then does the write (the proxy runs it once the answer is out).
    It is never deferred when the new messages carry inline attachments (their cards belong
    in this very request) or when the conversation is new.

    Raises:
        ConversationChangedError: other requests kept storing into it first (after
            `MAX_ATTEMPTS` tries).
    """
    for _ in range(MAX_ATTEMPTS):
        best = 0
        existing: set[str] = set()
        for cid in _candidates(ws, base, chain)[:MAX_CANDIDATES]:
            existing.add(cid)
            try:
                stored, seen = known.read(ws, cid) if known else (ws.messages(cid), [])
            except ConversationNotFoundError:
                continue
            shown = known.views(cid, stored) if known else None
            n, extends, owners = _common(request, stored, chain, seen, shown)
            if extends:
                match = _plan(request, cid, stored, n, owners)
                if defer and _deferrable(ws, match, stored):
                    match.pending = lambda match=match: _commit_later(
                        ws, match, chain, format, known
                    )
                    return match
                try:
                    _commit(ws, match, chain, format, known)
                except ConversationChangedError:
                    break  # read it again
                return match
            best = max(best, n)
        else:
            cid = _fork_name(ws, base, chain, best, existing)
            match = _plan(request, cid, [], 0, {})
            try:
                _commit(ws, match, chain, format, known)
            except ConversationChangedError:
                continue
            return match
    raise ConversationChangedError(
        f"conversation {base!r} kept changing while this request was stored; send it again"
    )


def _fork_name(
    ws: Workspace, base: str, chain: Sequence[str], common: int, existing: set[str]
) -> str:
    names = set(ws.conversations(prefix=base)) | existing
    if base not in names:
        return base
    tag = chain[min(common, len(chain) - 1)]
    name = f"{base}{FORK}{tag}"
    n = 1
    while name in names:
        n += 1
        name = f"{base}{FORK}{tag}.{n}"
    return name


def _plan(
    request: ClientRequest,
    cid: str,
    stored: list[dict[str, Any]],
    held: int,
    owners: dict[str, int],
) -> Match:
    """The match, with the request's new messages under the ids the store will give them
    (``m<position>``, or a Responses item's own id)."""
    new = request.messages[held:]
    owners = dict(owners)
    added = []
    assigned = set()
    for offset, message in enumerate(new):
        own = message.get("id")
        mid = own if isinstance(own, str) else f"m{len(stored) + offset + 1}"
        if not isinstance(own, str):
            assigned.add(mid)
        owners[mid] = held + offset
        added.append({**message, "id": mid})
    return Match(cid, stored + added, owners, len(new), not stored, frozenset(assigned))


def _deferrable(ws: Workspace, match: Match, stored: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the new messages may be stored after the request goes upstream: not when they
    carry inline attachments (their cards belong in this request), take the conversation
    past the fold threshold (the fold belongs in this request too, so the same history
    always gives the same bytes), or would not get the ids foreseen for them."""
    taken = {m.get("id") for m in stored}
    new = match.stored[len(stored) :]
    if match.created or any(m["id"] in taken for m in new):
        return False
    if any(True for m in new for _ in inline_blocks(m)):
        return False
    if not ws.auto_fold:
        return True
    fold = ws.fold_state(match.conversation_id)
    through = fold["summarized_through_message"] if fold else 0
    unsummarized = ws.stored_chars(match.conversation_id, after=through)
    return unsummarized + sum(content_chars(m) for m in new) <= ws.fold_policy.threshold_chars


def _commit(
    ws: Workspace,
    match: Match,
    chain: Sequence[str],
    format: str | None,
    known: Known | None,
) -> None:
    """Store the match's new messages (only if nothing was appended since it was read)."""
    before = match.held
    new = match.stored[before:]
    if new:
        bodies = [
            {k: v for k, v in m.items() if k != "id"} if m["id"] in match.assigned else m
            for m in new
        ]
        ids = ws.extend(match.conversation_id, bodies, after=before, source=SOURCE, format=format)
        for offset, (message, mid) in enumerate(zip(new, ids, strict=True)):
            if message["id"] != mid:  # an id a client message took first: the store's wins
                match.owners[mid] = match.owners.pop(message["id"])
                match.stored[before + offset] = {**message, "id": mid}
    if known is not None:
        known.keep(match.conversation_id, match.stored, chain)


def _commit_later(
    ws: Workspace,
    match: Match,
    chain: Sequence[str],
    format: str | None,
    known: Known | None,
) -> None:
    """A deferred `_commit`. The next request of the conversation may come before it runs
    (the upstream answered at once), find the conversation shorter, and store the same
    messages itself, first or after this one: what another request stored first of these
    very messages is not stored twice, the rest goes after it.

    Raises:
        ConversationChangedError: the conversation took other messages meanwhile (a
            fork's business: the next request of the client finds where it belongs).
    """
    before = match.held
    for _ in range(MAX_ATTEMPTS):
        try:
            _commit(ws, match, chain, format, known)
            return
        except ConversationChangedError:
            pass
        cid = match.conversation_id
        stored = known.read(ws, cid)[0] if known else ws.messages(cid)
        ours = match.stored[before:]
        theirs = stored[before : before + len(ours)]
        if len(stored) < before or not all(
            same(m, s, loose=False) for m, s in zip(ours, theirs, strict=False)
        ):
            raise ConversationChangedError(
                f"conversation {match.conversation_id!r} took other messages while this "
                "request's were waiting to be stored"
            )
        kept = len(theirs)
        if kept == len(ours):
            return  # all stored by the other request (which keeps its copy in `known`)
        match.stored[: before + kept] = stored[: before + kept]
        match.added = len(ours) - kept
    raise ConversationChangedError(
        f"conversation {match.conversation_id!r} kept changing while this request's messages "
        "were stored"
    )


# --- the lean body -----------------------------------------------------------------------------

HOLE = "\x00"  # marks where the history goes; a raw NUL cannot occur in JSON text


@dataclass
class Lean:
    """The body to send upstream, split around its history array so rounds can extend it."""

    head: str  # the body before the history array's closing bracket
    tail: str  # the closing bracket and the rest of the body
    result: ReplayResult
    tools: list[str]  # the tool names the proxy added (its hidden tools)
    problems: list[str] = field(default_factory=list)  # check_pairing's, if any

    def body(self, extra: Sequence[str] = ()) -> bytes:
        """The body, with ``extra`` messages (a next round's) at the end of the history."""
        more = "".join("," + part for part in extra)
        return (self.head + more + self.tail).encode("utf-8")


def our_tools(ws: Workspace, cid: str, declared: set[str]) -> list[str]:
    """The tools the proxy adds for a conversation: the retrieval tools, then every reader a
    card of the conversation names, in the library's order; none the client declared."""
    named: set[str] = set()
    for card in ws.attachment_cards(cid).values():
        found = _READERS.search(card)
        if found:
            named.update(found.group(1).split(", "))
    names = ["conversation_read", "conversation_search"]
    names += [n for n in TOOL_NAMES if n in named and n not in names]
    return [n for n in names if n not in declared]


def _cards(
    messages: list[dict[str, Any]], cards: Mapping[tuple[str, int], str]
) -> list[dict[str, Any]]:
    """Inline attachments as their cards, each card keeping its block's breakpoint."""
    if not cards:
        return messages
    out = list(messages)
    for i, message in enumerate(messages):
        mid = message.get("id")
        content = message.get("content")
        if not isinstance(mid, str) or not isinstance(content, list):
            continue
        blocks = [b for b in range(len(content)) if (mid, b) in cards]
        if not blocks:
            continue
        content = list(content)
        for b in blocks:
            card: dict[str, Any] = {"type": _text_type(content[b]), "text": cards[(mid, b)]}
            old = content[b]
            if isinstance(old, Mapping) and "cache_control" in old:
                card["cache_control"] = old["cache_control"]
            content[b] = card
        out[i] = {**message, "content": content}
    return out


def _text_type(block: Any) -> str:
    kind = block.get("type") if isinstance(block, Mapping) else None
    return "input_text" if kind in ("input_image", "input_file") else "text"


def _join_pending(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The proxy's results for calls it answered beside the client's (a ``pending`` group
    message) go into the client's next user message, right after the client's own results:
    Anthropic takes every result of one turn in one message, results first."""
    out: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None
    for message in messages:
        mark = message.get(PROXY_KEY)
        if isinstance(mark, Mapping) and mark.get("part") == "pending":
            pending = message
            continue
        if pending is not None and message.get("role") == "user":
            content = message.get("content")
            theirs = content if isinstance(content, list) else [{"type": "text", "text": content}]
            cut = 0
            while (
                cut < len(theirs)
                and isinstance(theirs[cut], Mapping)
                and theirs[cut].get("type") == "tool_result"
            ):
                cut += 1
            ours = list(pending["content"])
            joined = [*theirs[:cut], *ours, *theirs[cut:]]
            ids = [message.get("id")] * cut + [pending.get("id")] * len(ours)
            ids += [message.get("id")] * (len(theirs) - cut)
            message = {**message, "content": joined, "block_ids": ids}
            pending = None
        elif pending is not None:
            out.append(pending)
            pending = None
        out.append(message)
    if pending is not None:
        out.append(pending)
    return out


def clean(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message of the proxy's own (or the replay's) without bookkeeping keys; a Responses
    item keeps the ``id`` upstream gave it."""
    mark = message.get(PROXY_KEY)
    keep_id = isinstance(mark, Mapping) and mark.get("own_id") is True
    return {k: v for k, v in message.items() if k not in BOOKKEEPING or (k == "id" and keep_id)}


def build(
    ws: Workspace,
    api: Api,
    request: ClientRequest,
    match: Match,
    tools: Sequence[Mapping[str, Any]],
    policy: ReplayPolicy | None = None,
    now: float | None = None,
) -> Lean:
    """The lean body for the request: the stored conversation replayed (the client's
    messages in this request's bytes), our tools after the client's. ``now`` is when the
    request arrived (unix seconds): with the store's append times, what tells the replay
    that the provider's cache has expired since the request before it."""
    inputs: list[dict[str, Any]] = []
    sources: dict[int, int] = {}  # id() of an input message -> index of the request message
    for message in match.stored:
        mid = message.get("id")
        j = match.owners.get(mid) if isinstance(mid, str) else None
        value = request.messages[j] if j is not None else None
        if j is not None and isinstance(value, dict):
            message = {**value, "id": mid}
            sources[id(message)] = j
        inputs.append(message)
    result = _lean(ws, api, match.conversation_id, inputs, policy, now)
    return render(api, request, match, result, result.messages, tools, sources)


def render(
    api: Api,
    request: ClientRequest,
    match: Match,
    result: ReplayResult,
    messages: list[dict[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    sources: Mapping[int, int] | None = None,
) -> Lean:
    """The body for a lean message list (``messages``: the replay's, or the compacted copy
    of it after an overflow)."""
    sources = sources or {}
    rendered = [_render(api, request, m, match.owners, sources) for m in messages]
    edits: list[tuple[int, int, str]] = []
    if request.history_span is not None:
        edits.append((*request.history_span, HOLE))
    tools_edit = api.tools_edit(request, tools)
    if tools_edit is not None:
        edits.append(tools_edit)
    text = replace_spans(request.text, edits)
    head, _, tail = text.partition(HOLE)
    inner, close = _array(request, rendered)
    names = [str(t["name"]) for t in tools]
    return Lean(head + inner, close + tail, result, names, check_pairing(messages))


def _array(request: ClientRequest, rendered: list[tuple[str, int | None]]) -> tuple[str, str]:
    """The history array's text up to its last element, and its closing bracket: between two
    messages that follow each other in the client's request, the client's own separator, so
    an unchanged history is the client's bytes exactly."""
    text = request.text
    start, end = request.history_span or (0, 0)
    spans = request.spans
    out = ["["]
    previous: int | None = None
    for n, (part, j) in enumerate(rendered):
        if n == 0:
            out.append(text[start + 1 : spans[0][0]] if j == 0 else "")
        elif j is not None and previous is not None and j == previous + 1:
            out.append(text[spans[previous][1] : spans[j][0]])
        else:
            out.append(",")
        out.append(part)
        previous = j
    last = len(spans) - 1
    close = text[spans[last][1] : end] if spans and previous == last else "]"
    return "".join(out), close


def _lean(
    ws: Workspace,
    api: Api,
    cid: str,
    inputs: list[dict[str, Any]],
    policy: ReplayPolicy | None,
    now: float | None = None,
) -> ReplayResult:
    messages = _cards(inputs, ws.attachment_cards(cid))
    if api.name == "anthropic":
        messages = _join_pending(messages)
    view, through = _folded(ws, cid, messages)
    # The request's new messages may be stored after it goes upstream: ``now`` times it.
    times = ws.stored_times(cid, after=through)
    # As `Workspace.replay` does: a request that finds the cache expired is written in full
    # anyway, so the fold that waits for the normal threshold costs no cache rewrite now.
    expired = ws.auto_fold and cache_expired(view, policy, times=times, now=now)
    if expired and ws.fold(cid, cache_expired=True).folded:
        view, through = _folded(ws, cid, messages)
        times = ws.stored_times(cid, after=through)
    return replay(view, conversation_id=cid, policy=policy, times=times, now=now)


def _folded(
    ws: Workspace, cid: str, messages: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """The messages as a folded replay shows them (the leading system messages, the
    summary's preamble, the messages after the fold) and the fold's position (0: none)."""
    fold = ws.fold_state(cid)
    if fold is None:
        return messages, 0
    through = int(fold["summarized_through_message"])
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    prefix = folded_prefix(
        cid, fold["summary"], fold["summarized_through_message_id"], fold["generation"]
    )
    return messages[:lead] + prefix + messages[max(through, lead) :], through


def _render(
    api: Api,
    request: ClientRequest,
    message: dict[str, Any],
    owners: Mapping[str, int],
    sources: Mapping[int, int],
) -> tuple[str, int | None]:
    """One history message's JSON text (and the index of the client's message it is): the
    client's own bytes where the replay left it as the client sent it, spliced where it
    changed part of it, ours otherwise."""
    j = sources.get(id(message))
    if j is not None:
        start, end = request.spans[j]
        return request.text[start:end], j  # passed through the replay untouched
    mid = message.get("id")
    j = owners.get(mid) if isinstance(mid, str) else None
    if j is not None:
        client = request.messages[j]
        if isinstance(client, dict):
            new = {k: v for k, v in message.items() if k in client or k not in BOOKKEEPING}
            start, end = request.spans[j]
            return splice(request.text, start, end, client, new), j
    return dumps(api.upstream_message(clean(message))), None


def round_parts(api: Api, messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The JSON text of the proxy's own messages appended to the history for a next round."""
    return [dumps(api.upstream_message(clean(m))) for m in messages]
