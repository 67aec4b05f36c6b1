"""`leanreplay view`: a local, read-only web view of what the model saw.

Server-rendered pages over one `Workspace` (Starlette, served by uvicorn): the conversations,
and for each its History (every original), Replay (what the model receives), Summary (the
fold), Size (the sawtooth, from `Workspace.size_series`), Compactions (the event log) and
Prompt snapshots. Only GET exists: nothing in the view changes the store.

Security: loopback by default; a bearer token (given once in the URL, then an HttpOnly
SameSite=Strict cookie, or an ``Authorization: Bearer`` header); the Host header must be
the address served (no DNS rebinding) and a cross-site ``Origin`` or ``Sec-Fetch-Site`` is
refused; every page carries a Content-Security-Policy that allows no inline script. All
stored text is escaped by `_html`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leanreplay import cards, placeholders
from leanreplay.placeholders import (
    CHARS_PER_TOKEN,
    ReplayPolicy,
    estimate_tokens,
    fold_boundary,
    for_provider,
)

from .._errors import WorkspaceError
from .._workspace import Workspace
from ._html import (
    CSS,
    JS,
    chars,
    esc,
    href,
    message_html,
    page,
    plural,
    pretty_json,
    size_chart,
    snippet_html,
)
from ._net import MIN_TOKEN_CHARS, HostOriginMiddleware, HttpPolicy, TokenGate, bind, is_loopback
from ._viewcache import SERIES_POINTS, ViewCache

__all__ = [
    "MIN_TOKEN_CHARS",
    "SERIES_POINTS",
    "ViewSecurity",
    "build_app",
    "cookie_name",
    "is_loopback",
    "serve",
]

PAGE_MESSAGES = 50
PAGE_CONVERSATIONS = 50
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SORTS = ("id", "first", "last", "messages", "stored", "replay", "folds", "placeholders")


def cookie_name(port: int) -> str:
    """Cookies are shared by every port of a host: one name per served port."""
    return f"leanreplay_view_{port}"


async def _refuse(send: Send, status: int, text: str) -> None:
    body = page("refused", f"<h1>{esc(status)}</h1><p>{esc(text)}</p>").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-security-policy", CSP.encode()),
                (b"cache-control", b"no-store"),
                *([(b"allow", b"GET, HEAD")] if status == 405 else []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class ViewSecurity:
    """GET only, then the token (`TokenGate`: the URL once, then the view's cookie, or a
    bearer header), and the security headers on every page; Host and Origin are the
    `HttpPolicy`'s, checked before this (`build_app`)."""

    def __init__(self, app: ASGIApp, *, token: str | None, port: int) -> None:
        self.app: ASGIApp = self._secured
        self.inner = app
        if token is not None:
            self.app = TokenGate(
                self._secured,
                token,
                cookie=cookie_name(port),
                refuse=_refuse,
                message="this view needs its token: open the URL `leanreplay view` printed "
                "(it ends in ?token=...), or send Authorization: Bearer TOKEN",
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            await _refuse(send, 405, "this view is read-only: only GET requests exist")
            return
        await self.app(scope, receive, send)

    async def _secured(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [
                    *message.get("headers", []),
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ]
            await send(message)

        await self.inner(scope, receive, secured)


MAX_PARAM = 2**53  # no position, page or offset the pages take is larger


class BadParameter(Exception):
    """A query parameter the page cannot take; answered with a 400 page that says which."""


def _int(params: Mapping[str, str], name: str, default: int, low: int = 0) -> int:
    """The integer parameter ``name``: ``default`` when absent or empty, else between ``low``
    and `MAX_PARAM`, or `BadParameter`."""
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or not low <= number <= MAX_PARAM:
        raise BadParameter(
            f"{name} must be a whole number from {low} to {MAX_PARAM:,}, got {value[:40]!r}"
        )
    return number


def _iso(value: object) -> str:
    """An ISO time from the logs, as people read it: 2026-11-30 21:20:00.944 UTC."""
    text = str(value or "")
    try:
        moment = datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        return text or "–"
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def _when(unix: float | None) -> str:
    if unix is None:
        return "–"
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class View:
    """The pages, over one workspace; caches what is expensive and only grows."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.cache = ViewCache(workspace)

    # pages

    def conversations(self, request: Request) -> str:
        params = request.query_params
        query = (params.get("q") or "").strip()
        sort = str(params.get("sort")) if params.get("sort") in SORTS else "last"
        ascending = params.get("dir") == "asc"
        number = _int(params, "page", 1, low=1)
        body = [
            '<form class="search" method="get" action="/">'
            f'<input type="search" name="q" value="{esc(query)}" '
            'placeholder="Search every stored message (conversation_search)">'
            " <button>Search</button></form>"
        ]
        if query:
            body.append(self._search(query))
        stats = self.ws.conversation_stats()
        rows: list[dict[str, Any]] = []
        for s in stats:
            # The log's own times when it recorded them, else when the store took them.
            times = self.cache.log_times(s.id)
            first, last = times if times else (None, s.last_written)
            row: dict[str, Any] = {"id": s.id, "messages": s.messages, "stat": s}
            row.update(logged=times is not None, first=first or 0.0, last=last or 0.0)
            rows.append(row)
        needs_all = sort in ("stored", "replay", "folds", "placeholders")
        if needs_all:
            for row in rows:
                self._fill(row)
        rows.sort(key=lambda r: (r[sort], r["id"]), reverse=not ascending)
        pages = max(1, -(-len(rows) // PAGE_CONVERSATIONS))
        number = min(number, pages)
        shown = rows[(number - 1) * PAGE_CONVERSATIONS : number * PAGE_CONVERSATIONS]
        if not needs_all:
            for row in shown:
                self._fill(row, compute=False)
        total_messages = sum(r["messages"] for r in rows)
        body.append(
            f'<h1>Conversations</h1><p class="facts"><b>{len(rows):,}</b> conversations, '
            f"<b>{total_messages:,}</b> messages in <code>{esc(self.ws.home)}</code>. "
            "Each is titled by its first request; times are the first and last message as the "
            "log recorded them. Sizes are content characters; replay size is what the model "
            "receives now.</p>"
        )
        if not rows:
            body.append(
                '<p class="note">No conversations yet: <code>leanreplay ingest FILE</code> '
                "stores one.</p>"
            )
            return page("Conversations", "".join(body))
        heads = [
            ("id", "conversation", ""),
            ("messages", "messages", "num"),
            ("stored", "stored size", "num"),
            ("replay", "replay size", "num"),
            ("folds", "folds", "num"),
            ("placeholders", "placeholders", "num"),
            ("first", "first message", ""),
            ("last", "last message", ""),
        ]
        cells = []
        for key, label, cls in heads:
            flip = "desc" if key == sort and ascending else "asc" if key == sort else "desc"
            if key == "id" and key != sort:
                flip = "asc"
            on = " on" + (" asc" if ascending else "") if key == sort else ""
            link = href("/", q=query or None, sort=key, dir=flip)
            cells.append(
                f'<th class="{cls}"><a class="sort{on}" href="{link}">{esc(label)}</a></th>'
            )
        table = [f"<table class=conversations><thead><tr>{''.join(cells)}</tr></thead><tbody>"]
        for row in shown:
            title = self.cache.title(row["id"], row["stat"].last_seq)
            named = f'<div class="title">{esc(title)}</div>' if title else ""
            if row["logged"]:
                first_cell = f'<td class="when">{esc(_when(row["first"]))}</td>'
                last_cell = f'<td class="when">{esc(_when(row["last"]))}</td>'
            else:
                first_cell = '<td class="when note" title="the log records no times">–</td>'
                last_cell = (
                    f'<td class="when" title="stored at (the log records no times)">'
                    f"{esc(_when(row['stat'].last_written))}</td>"
                )
            table.append(
                f'<tr><td><a class="cid" href="{href("/c", id=row["id"])}">{esc(row["id"])}</a>'
                f"{named}</td>"
                f'<td class="num">{row["messages"]:,}</td>'
                f'<td class="num stored">{chars(row["stored"])}</td>'
                + self._lazy(row)
                + f'<td class="num">{row["folds"]}</td>'
                + self._lazy(row, "placeholders")
                + first_cell
                + last_cell
                + "</tr>"
            )
        table.append("</tbody></table>")
        body.append("".join(table))
        body.append(
            self._pager(
                number,
                pages,
                lambda n: href(
                    "/", q=query or None, sort=sort, dir="asc" if ascending else None, page=n
                ),
            )
        )
        return page("Conversations", "".join(body))

    def _fill(self, row: dict[str, Any], *, compute: bool = True) -> None:
        stat = row["stat"]
        row["stored"] = self.cache.stored_chars(stat.id, stat.last_seq)
        row.update(self.cache.replay_stats(stat.id, stat.last_seq, compute=compute))

    @staticmethod
    def _lazy(row: dict[str, Any], key: str = "replay") -> str:
        """A replay cell: the number, or a cell the page's script fills in."""
        if row[key] is not None:
            return f'<td class="num {key}">{chars(row[key])}</td>'
        return (
            f'<td class="num {key}" data-lazy="{esc(row["id"])}" '
            'title="replaying this conversation...">…</td>'
        )

    @staticmethod
    def _pager(number: int, pages: int, link: Callable[[int], str]) -> str:
        if pages <= 1:
            return ""
        prev = f'<a href="{link(number - 1)}">← previous</a>' if number > 1 else ""
        nxt = f'<a href="{link(number + 1)}">next →</a>' if number < pages else ""
        return f'<div class="pager">{prev}<span>page {number} of {pages}</span>{nxt}</div>'

    def _search(self, query: str) -> str:
        try:
            result = self.ws.conversation_search(query, limit=50)
        except WorkspaceError as exc:
            return f'<p class="note">search failed: {esc(exc)}</p>'
        hits = result["hits"]
        if not hits:
            return f'<p class="note">No stored message matches {esc(query)}.</p>'
        items = "".join(
            f'<li><a href="{href("/c", id=h["conversation_id"], at=h["message_id"])}#target">'
            f"{esc(h['conversation_id'])} · {esc(h['message_id'])}</a> "
            f'<span class="badge">{esc(h.get("role"))}</span> '
            f'<span class="snippet">{snippet_html(str(h.get("snippet", "")))}</span></li>'
            for h in hits
        )
        return f'<h2>{len(hits)} matching messages</h2><ul class="hits">{items}</ul>'

    def conversation(self, request: Request) -> str:
        params = request.query_params
        cid = params.get("id") or ""
        tab = params.get("tab") or "history"
        stat = self.ws.conversation_stats(cid)[0]
        fold = self.ws.fold_state(cid)
        info = self.ws.info(cid)
        tabs = [
            ("history", "History"),
            ("replay", "Replay"),
            ("summary", "Summary"),
            ("size", "Size over time"),
            ("compactions", "Compactions"),
            ("snapshots", "Prompt snapshots"),
        ]
        tab = tab if tab in dict(tabs) else "history"
        links = "".join(
            f'<a class="{"on" if key == tab else ""}" href="{href("/c", id=cid, tab=key)}">'
            f"{esc(label)}</a>"
            for key, label in tabs
        )
        folded = (
            f"folded {fold['generation']}× through message "
            f"<code>{esc(fold['summarized_through_message_id'])}</code>"
            if fold
            else "never folded"
        )
        stored = self.cache.stored_chars(cid, stat.last_seq)
        head = (
            f"<h1>{esc(cid)}</h1><p class=facts><b>{stat.messages:,}</b> messages · "
            f"<b>{chars(stored)}</b> chars stored · {folded} · "
            f"format {esc(info.format or '?')} · last written {esc(_when(stat.last_written))}"
            "</p>"
            + (
                f'<p class="facts">import notes: {esc("; ".join(info.notes))}</p>'
                if info.notes
                else ""
            )
            + f'<nav class="tabs">{links}</nav>'
        )
        render = {
            "history": self._history,
            "replay": self._replay,
            "summary": self._summary,
            "size": self._size,
            "compactions": self._compactions,
            "snapshots": self._snapshots,
        }[tab]
        return page(cid, head + render(cid, params, stat, fold))

    def _history(self, cid: str, params: Any, stat: Any, fold: Any) -> str:
        at = params.get("at")
        target_seq = self.ws.message_position(cid, at) if at else None
        before = min(_int(params, "before", stat.last_seq + 1, low=1), stat.last_seq + 1)
        if target_seq is not None:
            before = min(stat.last_seq + 1, target_seq + PAGE_MESSAGES // 2)
        page_items = self.ws.message_page(cid, before=before, limit=PAGE_MESSAGES)
        if not page_items:
            return '<p class="note">No messages.</p>'
        cards_by = self.ws.attachment_cards(cid)
        first, last = page_items[0][0], page_items[-1][0]
        through = fold["summarized_through_message"] if fold else None
        out = [self._message_pager(cid, first, last, stat.last_seq)]
        out.append(
            '<p class="note">Every original as stored, byte-exact: tool calls and results fold '
            "open and shut; the raw stored JSON of each message is under its ⤓ link.</p>"
        )
        for seq, message in page_items:
            if through is not None and seq == through + 1:
                out.append(self._boundary(cid, fold))
            mid = message.get("id")
            own = {b: c for (m, b), c in cards_by.items() if m == mid}
            raw = f' <a class="raw" href="{href("/c/raw", id=cid, mid=mid)}">⤓ raw</a>'
            out.append(
                message_html(
                    message,
                    position=f"#{seq}",
                    anchor=f"msg-{seq}",
                    cards=own,
                    extra=raw,
                    target=seq == target_seq,
                )
            )
        out.append(self._message_pager(cid, first, last, stat.last_seq))
        return "".join(out)

    def _boundary(self, cid: str, fold: Mapping[str, Any]) -> str:
        return (
            '<div class="boundary" id="fold-boundary"><b>Fold boundary.</b> Messages 1–'
            f"{fold['summarized_through_message']:,} (through "
            f"<code>{esc(fold['summarized_through_message_id'])}</code>) are folded into the "
            f"summary (fold #{fold['generation']}); the model receives "
            f'<a href="{href("/c", id=cid, tab="summary")}">the summary</a> instead of them, '
            "then the messages from here on.</div>"
        )

    @staticmethod
    def _message_pager(cid: str, first: int, last: int, end: int) -> str:
        if first == 1 and last == end:
            return f'<div class="pager"><span>all {end:,} messages</span></div>'
        older = (
            f'<a href="{href("/c", id=cid, before=first)}">← older {PAGE_MESSAGES}</a>'
            if first > 1
            else '<span class="note">the first message</span>'
        )
        newer = (
            f'<a href="{href("/c", id=cid, before=min(end + 1, last + 1 + PAGE_MESSAGES))}">'
            f"newer {PAGE_MESSAGES} →</a> "
            f'<a href="{href("/c", id=cid)}">latest ⇥</a>'
            if last < end
            else '<span class="note">the latest message</span>'
        )
        return (
            f'<div class="pager">{older}<span>messages {first:,}–{last:,} of {end:,}</span>'
            f"{newer}</div>"
        )

    def _replay(self, cid: str, params: Any, stat: Any, fold: Any) -> str:
        provider = params.get("provider")
        turn = _int(params, "turn", 0, low=0) or None
        age = "assistant_turn" if params.get("age") == "assistant_turn" else None
        policy = ReplayPolicy(age_unit="assistant_turn") if age else None
        state = {"id": cid, "tab": "replay", "provider": provider, "turn": turn, "age": age}

        def to(**changes: Any) -> str:
            return href("/c", **{**state, **changes})

        when = ""
        if turn is not None:
            result, point = self.ws.replay_at_turn(cid, turn, policy)
            last_turn = self.cache.turns(cid, stat.last_seq)
            steps = " · ".join(
                f'<a href="{to(turn=t)}">{label}</a>'
                for t, label in ((turn - 1, f"← turn {turn - 1}"), (turn + 1, f"turn {turn + 1} →"))
                if 1 <= t <= last_turn
            )
            when = (
                f'<p class="when">As the model received it <b>after turn {turn:,}</b> of '
                f"{last_turn:,}: {point.messages:,} messages were stored (the last "
                f"<code>{esc(point.message_id)}</code>), folded {point.folds}× by then. "
                f'{steps} · <a href="{to(turn=None)}">now</a></p>'
            )
        else:
            result = self.ws.replay(cid, policy)
        messages = result.messages
        n = len(messages)
        end = _int(params, "end", n, low=1)
        end = min(end, n)
        start = max(0, end - PAGE_MESSAGES)
        stats = result.stats()
        tokens = estimate_tokens(result.chars_out)
        views = " · ".join(
            f'<a href="{to(provider=p, end=None)}">{esc(label)}</a>'
            if p != provider
            else f"<b>{esc(label)}</b>"
            for p, label in (
                (None, "as replayed"),
                ("anthropic", "for_provider anthropic"),
                ("openai", "for_provider openai"),
            )
        )
        pick = (
            '<form class="turn" method="get" action="/c">'
            f'<input type="hidden" name="id" value="{esc(cid)}">'
            '<input type="hidden" name="tab" value="replay">'
            + (f'<input type="hidden" name="provider" value="{esc(provider)}">' if provider else "")
            + (f'<input type="hidden" name="age" value="{esc(age)}">' if age else "")
            + '<label>what did the model see after turn <input type="number" name="turn" min="1" '
            f'value="{turn or ""}"></label> <button>show</button></form>'
        )
        out = [
            when,
            pick,
            f'<p class="facts">The model {"received" if turn else "receives"} '
            f"<b>{stats['messages']:,}</b> messages, "
            f"<b>{chars(result.chars_out)}</b> chars (≈ {tokens:,} tokens at "
            f"{CHARS_PER_TOKEN} chars per token) from {chars(result.chars_in)} before "
            f"placeholders; <b>{result.placeholders}</b> placeholders stand for "
            f"{chars(result.elided_chars)} chars. Highlighted placeholders fetch their "
            "original when clicked.</p>",
            f'<p class="facts">{views}</p>',
            '<p class="facts">Tool results age by '
            + (
                f'<a href="{to(age=None)}">user exchanges</a> · <b>assistant turns</b> '
                "(for single-task agent loops)"
                if age
                else f'<b>user exchanges</b> · <a href="{to(age="assistant_turn")}">assistant '
                "turns</a> (for single-task agent loops)"
            )
            + "</p>",
        ]
        pager = self._replay_pager(start, end, n, to)
        out.append(pager)
        if provider in ("anthropic", "openai"):
            try:
                sent = for_provider(messages, provider)
            except (placeholders.PlaceholderError, ValueError) as exc:
                out.append(f'<p class="note">for_provider({esc(provider)}) refused: {esc(exc)}</p>')
                return "".join(out)
            dump = pretty_json(sent[start:end])
            out.append(
                f'<p class="note">messages {start + 1}–{end} of the request body\'s '
                f"<code>messages</code>, exactly as <code>for_provider(..., "
                f'"{esc(provider)}")</code> returns them:</p><pre class="text">{esc(dump)}</pre>'
            )
            return "".join(out)

        for i in range(start, end):
            message = messages[i]
            mid = message.get("id")
            mid_text = mid if isinstance(mid, str) else ""

            def placeholder(text: str, call_id: str | None, mid_text: str = mid_text) -> str:
                return (
                    f'<button type="button" class="placeholder" data-cid="{esc(cid)}" '
                    f'data-mid="{esc(mid_text)}" data-call="{esc(call_id or "")}">'
                    f"{esc(text)}</button>"
                )

            out.append(
                message_html(
                    message, position=f"{i + 1}", anchor=f"r-{i + 1}", placeholder=placeholder
                )
            )
        out.append(pager)
        return "".join(out)

    @staticmethod
    def _replay_pager(start: int, end: int, n: int, to: Callable[..., str]) -> str:
        if n <= PAGE_MESSAGES:
            return ""
        older = f'<a href="{to(end=start)}">← earlier {PAGE_MESSAGES}</a>' if start > 0 else ""
        newer = f'<a href="{to(end=None)}">last ⇥</a>' if end < n else ""
        return (
            f'<div class="pager">{older}<span>replayed messages {start + 1:,}–{end:,} of '
            f"{n:,}</span>{newer}</div>"
        )

    def _summary(self, cid: str, params: Any, stat: Any, fold: Any) -> str:
        policy = self.ws.fold_policy
        rule = (
            f"The fold runs after a message is stored once the unsummarized messages carry over "
            f"<b>{policy.threshold_chars:,}</b> chars; it keeps the last "
            f"<b>{policy.keep_last}</b> messages verbatim, backs off to a genuine user turn, "
            f"and writes one summary of at most {policy.max_summary_chars:,} chars."
        )
        since = self.ws.stored_chars(cid, after=fold["summarized_through_message"] if fold else 0)
        if fold is None:
            messages = self.ws.messages(cid)
            _, why = fold_boundary(messages, 0, policy)
            return (
                f'<p class="facts">{rule}</p><h2>Not folded</h2>'
                f"<p>{esc(why)}.</p><p class=facts>Unsummarized now: "
                f"<b>{chars(since)}</b> chars.</p>"
            )
        return (
            f'<p class="facts">{rule}</p>'
            f"<h2>Summary (fold #{fold['generation']})</h2>"
            '<dl class="kv"><dt>summarized_through_message_id</dt>'
            f'<dd><a href="{href("/c", id=cid, at=fold["summarized_through_message_id"])}'
            f'#target"><code>{esc(fold["summarized_through_message_id"])}</code></a></dd>'
            f"<dt>summarized_through_message</dt><dd>{fold['summarized_through_message']:,} "
            f"of {stat.messages:,}</dd><dt>summary size</dt><dd>{len(fold['summary']):,} chars"
            f"</dd><dt>unsummarized since</dt><dd>{chars(since)} chars (the next fold comes "
            f"after {policy.threshold_chars:,})</dd></dl>"
            f'<pre class="text summary">{esc(fold["summary"])}</pre>'
        )

    def _size(self, cid: str, params: Any, stat: Any, fold: Any) -> str:
        series = self.cache.size_series(cid, stat.last_seq)
        snaps = self.ws.snapshots(cid)
        budgets = [int(s["budget_tokens"]) for s in snaps if s.get("budget_tokens")]
        budget_chars = int(budgets[-1] * CHARS_PER_TOKEN) if budgets else None
        chart = size_chart(
            series,
            threshold=self.ws.fold_policy.threshold_chars,
            budget_chars=budget_chars,
            snapshots=snaps,
            link=lambda turn: href("/c", id=cid, tab="replay", turn=turn),
        )
        folds = series[-1]["folds"] if series else 0
        rows = "".join(
            f'<tr><td class="num">{p["turn"]}</td><td class="num">{p["messages"]:,}</td>'
            f'<td class="num">{p["stored_chars"]:,}</td>'
            f'<td class="num">{p["replay_chars_fold_only"]:,}</td>'
            f'<td class="num">{p["replay_chars"]:,}</td><td class="num">{p["folds"]}</td></tr>'
            for p in series
        )
        return (
            '<p class="facts">Replay size after each turn, as the conversation grew message by '
            "message with the automatic fold on (the series <code>bench/bench_fold.py</code> "
            "prints; <code>Workspace.size_series</code>). Each fold drops the replay back: "
            f"<b>{plural(folds, 'fold')}</b> over <b>{plural(len(series), 'turn')}</b> shown"
            + (" (sampled)" if series and series[-1]["turn"] > len(series) else "")
            + ". The lines replay the stored messages under the current fold policy; the "
            "prompt snapshots (■) are what model calls actually received. Click a point to "
            "see that turn's replay.</p>"
            + chart
            + "<details><summary>the numbers</summary><table><thead><tr><th class=num>turn"
            "</th><th class=num>messages</th><th class=num>unfolded</th><th class=num>fold "
            "only</th><th class=num>replay</th><th class=num>folds</th></tr></thead><tbody>"
            + rows
            + "</tbody></table></details>"
        )

    def _compactions(self, cid: str | None, params: Any, stat: Any, fold: Any) -> str:
        events = self.ws.compaction_events(cid)
        if not events:
            where = "this conversation" if cid else "this home"
            return (
                f'<p class="note">No compaction events for {where}. The in-turn compactor logs '
                "<code>compaction.started</code> / <code>compaction.applied</code> when a turn "
                "goes over 75% of its input budget (<code>ws.compact_turn</code>, "
                "<code>ws.model_call</code>).</p>"
            )
        groups: dict[str, list[dict[str, Any]]] = {}
        order: list[str] = []
        for n, event in enumerate(events):
            key = str(event.get("compaction_id") or f"event-{n}")
            if key not in groups:
                order.append(key)
            groups.setdefault(key, []).append(event)
        cards_out = [
            f'<p class="facts"><b>{plural(len(order), "compaction")}</b>, newest first.</p>'
        ]
        for key in reversed(order):
            cards_out.append(self._compaction_card(key, groups[key], cid is None))
        return "".join(cards_out)

    @staticmethod
    def _compaction_card(key: str, events: list[dict[str, Any]], show_cid: bool) -> str:
        started = next((e for e in events if e.get("event") == "compaction.started"), None)
        applied = next((e for e in events if e.get("event") == "compaction.applied"), None)
        first = started or applied or events[0]
        state = "applied" if applied else "started, never applied (the process stopped?)"
        facts = [("when", _iso(first.get("time"))), ("state", state)]
        if show_cid:
            facts.append(("conversation", first.get("conversation_id") or "(none given)"))
        if started:
            facts.append(
                (
                    "trigger",
                    "forced by a provider overflow error"
                    if started.get("forced")
                    else "over 75% of the input budget",
                )
            )
            facts.append(("budget", f"{chars(started.get('budget_tokens'))} tokens"))
        if applied:
            facts += [
                (
                    "tokens",
                    f"{chars(applied.get('tokens_before'))} → {chars(applied.get('tokens_after'))}"
                    f" (saved {chars(applied.get('tokens_saved'))}; target "
                    f"{chars(applied.get('target_tokens'))}, "
                    f"{'reached' if applied.get('target_reached') else 'NOT reached'})",
                ),
                (
                    "chars",
                    f"{chars(applied.get('chars_before'))} → {chars(applied.get('chars_after'))}"
                    f" (saved {chars(applied.get('chars_saved'))})",
                ),
                ("duration", f"{applied.get('duration_ms')} ms"),
                ("actions", "; ".join(map(str, applied.get("actions") or [])) or "none"),
            ]
        kv = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
        targets = applied.get("targets") if applied else None
        table = ""
        if targets:
            rows = "".join(
                f"<tr><td><code>{esc(t.get('message_id') or t.get('message'))}</code></td>"
                f"<td>{esc(t.get('kind'))}</td><td><code>{esc(t.get('tool_call_id') or '')}"
                f'</code></td><td class="num">{chars(t.get("chars_before"))}</td>'
                f'<td class="num">{chars(t.get("chars_after"))}</td>'
                f"<td><code>{esc(t.get('fetch') or '')}</code></td></tr>"
                for t in targets
                if isinstance(t, Mapping)
            )
            table = (
                f"<details open><summary>{len(targets)} targets</summary><table><thead><tr>"
                "<th>message</th><th>what</th><th>tool call</th><th class=num>chars before</th>"
                "<th class=num>after</th><th>the original</th></tr></thead><tbody>"
                f"{rows}</tbody></table></details>"
            )
        title = "Compaction applied" if applied else "Compaction started"
        return (
            f'<section class="compaction" data-compaction="{esc(key)}"><h3>{title}</h3>'
            f'<dl class="kv">{kv}</dl>{table}</section>'
        )

    @staticmethod
    def _stored_link(snapshot: Mapping[str, Any]) -> str:
        """Messages stored when the snapshot was taken, linking to the last of them."""
        count = chars(snapshot.get("messages_stored"))
        last = snapshot.get("last_message_id")
        if not last:
            return f'<td class="num">{count}</td>'
        link = href("/c", id=snapshot.get("conversation_id"), at=last)
        return f'<td class="num"><a href="{link}#target">{count}</a></td>'

    def _snapshots(self, cid: str | None, params: Any, stat: Any, fold: Any) -> str:
        snaps = self.ws.snapshots(cid)
        if not snaps:
            return (
                '<p class="note">No prompt snapshots. They are recorded for each replay made for '
                "a model call: <code>ws.replay(cid, snapshot=True)</code> or "
                "<code>ws.model_call(...)</code>; the home keeps the last 50.</p>"
            )
        rows = []
        for s in reversed(snaps):
            budget = s.get("budget_tokens")
            share = f"{100 * int(s.get('estimated_tokens') or 0) / budget:.0f}%" if budget else "–"
            conv = (
                f'<td><a href="{href("/c", id=s.get("conversation_id"))}">'
                f"{esc(s.get('conversation_id'))}</a></td>"
                if cid is None
                else ""
            )
            rows.append(
                f"<tr><td>{esc(_iso(s.get('time')))}</td>{conv}<td>{esc(s.get('source'))}</td>"
                + self._stored_link(s)
                + f'<td class="num">{chars(s.get("messages_sent"))}</td>'
                f'<td class="num">{chars(s.get("chars"))}</td>'
                f'<td class="num">{chars(s.get("estimated_tokens"))}</td>'
                f'<td class="num">{chars(budget)}</td><td class="num">{share}</td>'
                f'<td class="num">{chars(s.get("placeholders"))}</td>'
                f"<td>{'yes (#' + str(s.get('fold_generation')) + ')' if s.get('folded') else 'no'}"
                f"</td><td>{'yes' if s.get('compacted') else 'no'}</td></tr>"
            )
        conv_head = "<th>conversation</th>" if cid is None else ""
        return (
            f'<p class="facts"><b>{len(snaps)}</b> prompt snapshots (the home keeps the last 50'
            "), newest first. Each is one request as the model received it.</p>"
            f"<table class=snapshots><thead><tr><th>time</th>{conv_head}<th>source</th>"
            "<th class=num>messages stored</th><th class=num>messages sent</th>"
            "<th class=num>chars sent</th>"
            "<th class=num>≈ tokens</th><th class=num>budget</th><th class=num>of budget</th>"
            "<th class=num>placeholders</th><th>fold</th><th>compacted</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )


def build_app(workspace: Workspace, *, token: str | None, port: int, policy: HttpPolicy) -> ASGIApp:
    """The view as an ASGI app behind the HTTP faces' Host and Origin rules (``policy``) and
    `ViewSecurity`."""
    view = View(workspace)

    def html_page(render: Callable[[Request], str]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return HTMLResponse(render(request))
            except BadParameter as exc:
                return HTMLResponse(
                    page("bad request", f"<h1>Bad request</h1><p>{esc(exc)}</p>"), status_code=400
                )
            except (WorkspaceError, placeholders.PlaceholderError, cards.CardError) as exc:
                return HTMLResponse(
                    page("not found", f"<h1>Not found</h1><p>{esc(exc)}</p>"), status_code=404
                )

        return endpoint

    def raw(request: Request) -> Response:
        try:
            body = workspace.raw_message(
                request.query_params.get("id") or "", request.query_params.get("mid") or ""
            )
        except WorkspaceError as exc:
            return Response(str(exc), status_code=404, media_type="text/plain; charset=utf-8")
        return Response(body, media_type="text/plain; charset=utf-8")

    def read(request: Request) -> Response:
        params = request.query_params
        try:
            result = workspace.conversation_read(
                params.get("conversation_id") or "",
                params.get("message_id") or "",
                params.get("tool_call_id") or None,
                offset=_int(params, "offset", 0),
            )
        except BadParameter as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except WorkspaceError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse(result)

    def replay_stats(request: Request) -> Response:
        cid = request.query_params.get("id") or ""
        try:
            stat = workspace.conversation_stats(cid)[0]
            return JSONResponse(view.cache.replay_stats(cid, stat.last_seq))
        except WorkspaceError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)

    def static(body: str, media: str) -> Callable[[Request], Response]:
        return lambda request: Response(body, media_type=media)

    routes = [
        Route("/", html_page(view.conversations)),
        Route("/c", html_page(view.conversation)),
        Route("/c/raw", raw),
        Route("/api/conversation_read", read),
        Route("/api/replay_stats", replay_stats),
        Route(
            "/snapshots",
            html_page(
                lambda r: page(
                    "Prompt snapshots",
                    "<h1>Prompt snapshots</h1>" + view._snapshots(None, r.query_params, None, None),
                )
            ),
        ),
        Route(
            "/compactions",
            html_page(
                lambda r: page(
                    "Compactions",
                    "<h1>Compactions</h1>" + view._compactions(None, r.query_params, None, None),
                )
            ),
        ),
        Route("/static/view.css", static(CSS, "text/css; charset=utf-8")),
        Route("/static/view.js", static(JS, "text/javascript; charset=utf-8")),
    ]
    app = Starlette(routes=routes)
    return HostOriginMiddleware(ViewSecurity(app, token=token, port=port), policy, _refuse)


def serve(
    workspace: Workspace,
    host: str,
    port: int,
    token: str | None,
    *,
    allow_remote: bool,
    announce: Callable[[str], None],
) -> None:
    """Serve the view until interrupted; ``announce`` gets the URL to open (with the token)."""
    import anyio
    import uvicorn

    sock = bind(host, port)
    port = sock.getsockname()[1]
    # With --allow-remote any Host is answered (the address people use is not known here);
    # the token is required there.
    policy = HttpPolicy(None) if allow_remote else HttpPolicy.for_bind(host, port)
    app = build_app(workspace, token=token, port=port, policy=policy)
    shown = f"[{host}]" if ":" in host else host
    announce(f"http://{shown}:{port}/" + (f"?token={token}" if token else ""))
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])
