"""The HTTP face: an ASGI app (Starlette, served by uvicorn) in front of the upstream API.

``POST /v1/messages``, ``/v1/chat/completions`` and ``/v1/responses`` get the lean replay
and the proxy's retrieval rounds; every other request (``count_tokens``, model lists, files)
is forwarded unchanged, bytes in and bytes out. Headers are forwarded as the client sent
them (the hop-by-hop ones aside) and are never stored or logged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hmac
import json
import re
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import httpx2
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from leanreplay.placeholders import PlaceholderError, ReplayPolicy, is_context_overflow

from ..._errors import (
    BusyError,
    ConversationChangedError,
    InvalidArgumentError,
    ProxyError,
    WorkspaceError,
)
from ..._workspace import Workspace
from ...store._store import check_id
from .._net import HttpPolicy, bind
from ._anthropic import Anthropic
from ._api import Api, ClientRequest, Round, StreamTranslator, add_usage
from ._chat import Chat
from ._conversation import (
    FAMILY_HEADER,
    PROXY_KEY,
    Known,
    Lean,
    Match,
    build,
    conversation_of,
    digests,
    family,
    our_tools,
    render,
    round_parts,
)
from ._jsontext import JsonTextError
from ._responses import Responses
from ._retrieval import LIMIT_NOTE, run_calls, schemas
from ._sse import encode, events

__all__ = [
    "BODY_TIMEOUT_S",
    "MAX_REQUEST_BYTES",
    "MAX_ROUNDS",
    "TOKEN_HEADER",
    "ProxyConfig",
    "proxy_app",
    "serve",
]

MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a request body, at most (refused before it is read)
BODY_TIMEOUT_S = 120.0  # the whole request body must arrive within this
CONNECT_TIMEOUT_S = 10.0
UPSTREAM_TIMEOUT_S = 600.0  # between two bytes of an upstream answer (Anthropic SDK default)
MAX_ROUNDS = 4  # the proxy's own tool rounds per client request
GC_YOUNG = 20_000  # allocations between two young collections in a proxy process (700)
RECENT_REQUESTS = 8  # parsed requests kept per API, to take the next one's parse from
RECENT_CHARS = 32 * 1024 * 1024  # ... holding at most this many chars of text per API
TOKEN_HEADER = "x-leanreplay-token"  # the proxy's own token, off loopback
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        FAMILY_HEADER,
        TOKEN_HEADER,
    }
)
_WINDOW = re.compile(
    r"(?:> ?|maximum context length is |context (?:length|window) of )(\d{4,9})(?: tokens)?"
    r"(?: maximum)?",
    re.IGNORECASE,
)
_DEFAULT_WINDOW = {"anthropic": 200_000, "openai": 128_000, "openai-responses": 128_000}


@dataclass(frozen=True)
class ProxyConfig:
    """How the proxy reaches its upstream and what it accepts.

    Attributes:
        upstream: the API's base URL (``https://api.anthropic.com``); request paths are
            appended to it.
        token: required in the `TOKEN_HEADER` header of every request when set (a proxy
            bound beyond loopback).
        policy: the replay policy (the library's default, cache-aware).
        clock: the time a request arrives (unix seconds; `time.time`): with the store's
            append times, what tells the replay that the provider's cache expired since
            the conversation's request before it (`replay`'s ``now``).
    """

    upstream: str
    token: str | None = None
    http: HttpPolicy | None = None
    policy: ReplayPolicy | None = None
    max_request_bytes: int = MAX_REQUEST_BYTES
    body_timeout: float = BODY_TIMEOUT_S
    connect_timeout: float = CONNECT_TIMEOUT_S
    upstream_timeout: float = UPSTREAM_TIMEOUT_S
    max_rounds: int = MAX_ROUNDS
    clock: Callable[[], float] = time.time
    apis: Mapping[str, Api] = field(
        default_factory=lambda: {a.path: a for a in (Anthropic(), Chat(), Responses())}
    )

    def __post_init__(self) -> None:
        if not re.match(r"^https?://[^/\s]+", self.upstream):
            raise InvalidArgumentError(
                f"the upstream must be an http(s) URL such as https://api.anthropic.com, "
                f"got {self.upstream!r}"
            )
        for name in ("max_request_bytes", "max_rounds"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (0 if name == "max_rounds" else 1):
                raise InvalidArgumentError(f"{name} must be a positive int, got {value!r}")


@dataclass
class _Prepared:
    match: Match
    lean: Lean
    tools: list[dict[str, Any]]
    hidden: frozenset[str]
    chain: list[str]


def proxy_app(
    workspace: Workspace, config: ProxyConfig
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The ASGI app of a proxy over ``workspace``'s store."""
    return _Proxy(workspace, config)


class _Proxy:
    def __init__(self, workspace: Workspace, config: ProxyConfig) -> None:
        self.ws = workspace
        self.config = config
        self.base = config.upstream.rstrip("/")
        self.policy = config.policy or ReplayPolicy()  # built (and checked) once
        self._client: httpx2.AsyncClient | None = None
        self.known = Known()
        self.recent = _Recent()
        self.writer = ThreadPoolExecutor(max_workers=4, thread_name_prefix="leanreplay-store")
        self._writes = 0  # deferred writes not done yet
        self._writes_lock = threading.Condition()

    def write_later(self, write: Callable[[], None]) -> _Deferred:
        """A deferred write of the store, counted (see `settle`) from now on and run in the
        writer's threads once started."""
        with self._writes_lock:
            self._writes += 1
        return _Deferred(self, write)

    def _written(self, _: object = None) -> None:
        with self._writes_lock:
            self._writes -= 1
            self._writes_lock.notify_all()

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait until every deferred write is done (what a test or a shutdown needs)."""
        with self._writes_lock:
            return self._writes_lock.wait_for(lambda: self._writes == 0, timeout)

    @property
    def client(self) -> httpx2.AsyncClient:
        if self._client is None:
            timeout = httpx2.Timeout(
                self.config.upstream_timeout, connect=self.config.connect_timeout
            )
            self._client = httpx2.AsyncClient(timeout=timeout, follow_redirects=False)
        return self._client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        api = self.config.apis.get(request.url.path) if request.method == "POST" else None
        sessions: list[_Session] = []
        try:
            try:
                self._admit(scope, request)
                response = await (
                    self._lean(request, api, sessions) if api else self._forward(request)
                )
            except ProxyError as refused:
                error = (api or _api_for(request.url.path)).error_bytes(
                    refused.status, str(refused)
                )
                response = Response(error, refused.status, media_type="application/json")
            await response(scope, receive, send)
        finally:
            for session in sessions:
                session.start_writing()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _ = self.client  # its TLS context loads the CA bundle: not in a request's time
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                self.writer.shutdown(wait=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _admit(self, scope: Scope, request: Request) -> None:
        if self.config.http is not None:
            refused = self.config.http.refusal(scope)
            if refused is not None:
                raise ProxyError(*refused)
        token = self.config.token
        if token is not None:
            given = request.headers.get(TOKEN_HEADER, "")
            if not hmac.compare_digest(given.encode(), token.encode()):
                raise ProxyError(
                    401, f"this proxy needs its token in the {TOKEN_HEADER} header; send it"
                )

    # the request body

    async def _body(self, request: Request) -> bytes:
        limit = self.config.max_request_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise ProxyError(
                413,
                f"the request body has {int(declared):,} bytes, over this proxy's limit of "
                f"{limit:,}; send less (large files as paths, not inline)",
            )
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(self.config.body_timeout):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise ProxyError(
                            413,
                            f"the request body is over this proxy's limit of {limit:,} bytes; "
                            "send less (large files as paths, not inline)",
                        )
                    chunks.append(chunk)
        except TimeoutError:
            raise ProxyError(
                408,
                f"the request body did not arrive within {self.config.body_timeout:g} s "
                f"({size:,} bytes came); send it faster or in one piece",
            ) from None
        return b"".join(chunks)

    def _headers(self, request: Request, *, identity: bool) -> list[tuple[str, str]]:
        out = [(k, v) for k, v in request.headers.items() if k.lower() not in _HOP]
        if identity:  # the proxy reads the answer: plain bytes, not compressed
            out = [(k, v) for k, v in out if k.lower() != "accept-encoding"]
            out.append(("accept-encoding", "identity"))
        return out

    def _url(self, request: Request) -> str:
        query = request.url.query
        return self.base + request.url.path + (f"?{query}" if query else "")

    # forwarding unchanged

    async def _forward(self, request: Request, body: bytes | None = None) -> Response:
        if body is None:
            body = await self._body(request) if request.method not in ("GET", "HEAD") else b""
        upstream = self.client.build_request(
            request.method,
            self._url(request),
            headers=self._headers(request, identity=False),
            content=body,
        )
        response = await self._send(upstream, stream=True)
        return StreamingResponse(
            _raw(response),
            status_code=response.status_code,
            headers=_pass_headers(response, keep_length=True),
        )

    async def _send(self, upstream: httpx2.Request, *, stream: bool) -> httpx2.Response:
        try:
            return await self.client.send(upstream, stream=stream)
        except httpx2.TimeoutException:
            raise ProxyError(
                504,
                f"the upstream {self.base} did not answer in time; try again, or check it",
            ) from None
        except httpx2.HTTPError as exc:
            raise ProxyError(
                502,
                f"the proxy could not reach the upstream {self.base} ({type(exc).__name__}); "
                "check the proxy's upstream URL and the network",
            ) from None

    # the lean path

    async def _lean(self, request: Request, api: Api, sessions: list[_Session]) -> Response:
        arrived = self.config.clock()  # how the replay knows the provider's cache expired
        body = await self._body(request)
        try:
            text = body.decode("utf-8")
            parsed = api.parse(text, self.recent.of(api.name))
        except UnicodeDecodeError:
            raise ProxyError(400, "the request body is not UTF-8 text; send JSON") from None
        except JsonTextError as exc:
            raise ProxyError(
                400, f"the request body is not a JSON object ({exc}); send valid JSON"
            ) from None
        if api.check(parsed) is not None or not parsed.messages:
            return await self._forward(request, body)
        self.recent.keep(api.name, parsed)
        header = request.headers.get(FAMILY_HEADER)
        if header is not None:
            try:
                check_id(FAMILY_HEADER, header)
            except InvalidArgumentError as exc:
                raise ProxyError(400, f"{exc}; send a short printable id") from None
        try:
            prepared = await anyio.to_thread.run_sync(self._prepare, api, parsed, header, arrived)
        except (InvalidArgumentError, PlaceholderError):
            # History the store or the replay cannot take: the upstream judges it as it came.
            return await self._forward(request, body)
        except (BusyError, ConversationChangedError) as exc:
            raise ProxyError(
                503, f"the proxy's store is busy ({exc}); send the request again"
            ) from None
        except WorkspaceError as exc:
            raise ProxyError(500, f"the proxy could not store the conversation: {exc}") from None
        if prepared.lean.problems:
            # The replay would be rejected; the client's own history goes as it came.
            return await self._forward(request, body)
        session = _Session(self, request, api, parsed, prepared)
        sessions.append(session)
        if parsed.stream:
            return await session.stream()
        return await session.complete()

    def _prepare(
        self, api: Api, request: ClientRequest, header: str | None, now: float | None = None
    ) -> _Prepared:
        chain = digests(request)
        base = family(api, request, header, chain)
        check_id("conversation id", base)
        match = conversation_of(
            self.ws, request, base, chain, format=api.provider, known=self.known, defer=True
        )
        names = our_tools(self.ws, match.conversation_id, api.declared_tools(request))
        tools = schemas(names)
        lean = build(self.ws, api, request, match, tools, self.policy, now)
        return _Prepared(match, lean, tools, frozenset(names), list(chain))


class _Deferred:
    """A write of the store that a request started late, off its critical path: a
    non-streamed answer's once the client has it, a streamed one's after its first event
    (a real upstream takes far longer to answer than the write takes, either way)."""

    def __init__(self, proxy: _Proxy, write: Callable[[], None]) -> None:
        self._proxy = proxy
        self._write: Callable[[], None] | None = write
        self.future: Future[None] | None = None

    def start(self) -> Future[None] | None:
        """Submit the write (once; later calls return the same future)."""
        write, self._write = self._write, None
        if write is not None:
            try:
                self.future = self._proxy.writer.submit(write)
            except RuntimeError:  # shutting down: the client's next request carries them
                self._proxy._written()
                return None
            self.future.add_done_callback(self._proxy._written)
        return self.future


class _Recent:
    """The latest requests parsed, per API, newest first: the next request of a client holds
    most of its previous one's text, whose parse (and digests) it takes instead of doing
    them again. Bounded in number and in chars (the texts are kept whole)."""

    def __init__(self, depth: int = RECENT_REQUESTS, chars: int = RECENT_CHARS) -> None:
        self.depth = depth
        self.chars = chars
        self._lists: dict[str, list[ClientRequest]] = {}
        self._lock = threading.Lock()

    def of(self, api: str) -> list[ClientRequest]:
        with self._lock:
            return list(self._lists.get(api, ()))

    def keep(self, api: str, request: ClientRequest) -> None:
        with self._lock:
            kept = [request, *(r for r in self._lists.get(api, ()) if r is not request)]
            del kept[self.depth :]
            total = 0
            for n, r in enumerate(kept):
                total += len(r.text)
                if total > self.chars:
                    del kept[n:]
                    break
            self._lists[api] = kept


def _api_for(path: str) -> Api:
    return Chat() if path.startswith(("/v1/chat", "/v1/responses", "/v1/models")) else Anthropic()


def _pass_headers(response: httpx2.Response, *, keep_length: bool) -> dict[str, str]:
    skip = set(_HOP) - ({"content-length"} if keep_length else set())
    if not keep_length:
        skip.add("content-encoding")
    return {k: v for k, v in response.headers.items() if k.lower() not in skip}


async def _raw(response: httpx2.Response) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.aiter_raw():
            yield chunk
    finally:
        await response.aclose()


class _Session:
    """One client request through the proxy: up to `ProxyConfig.max_rounds` rounds of the
    proxy's own tool calls, one answer to the client."""

    def __init__(
        self, proxy: _Proxy, request: Request, api: Api, parsed: ClientRequest, prepared: _Prepared
    ) -> None:
        self.proxy = proxy
        self.request = request
        self.api = api
        self.parsed = parsed
        self.prepared = prepared
        self.cid = prepared.match.conversation_id
        self.hidden = prepared.hidden
        self.lean = prepared.lean
        self.extra: list[str] = []  # the rounds' messages appended to the history
        self.group: list[dict[str, Any]] = []  # the rounds' messages to store
        self.parts: list[Any] = []  # what the client was shown of every round
        self.usage: dict[str, Any] | None = None
        self.rounds = 0  # upstream calls made
        self.retried = False
        self.group_id: str | None = None
        # The request's new messages are stored off its path (a deferred write, see
        # `conversation_of`, started once the answer is out: `start_writing`); only the
        # proxy's own rounds wait for it, since they are stored after them. Nothing else
        # needs to: a next request that comes before the write is done finds the
        # conversation shorter and holds the same messages as new; whichever write runs
        # second stores only what the first did not (`_commit_later`).
        pending = prepared.match.pending
        self.writing = proxy.write_later(pending) if pending is not None else None

    def start_writing(self) -> None:
        """Start the deferred write (the app calls this once the answer is out, whatever
        happened; the stream, after its first event)."""
        if self.writing is not None:
            self.writing.start()

    def _upstream(self, *, stream: bool) -> httpx2.Request:
        return self.proxy.client.build_request(
            "POST",
            self.proxy._url(self.request),
            headers=self.proxy._headers(self.request, identity=True),
            content=self.lean.body(self.extra),
        )

    async def _call(self, *, stream: bool) -> httpx2.Response:
        """One upstream call; on a context overflow the replay is compacted and the call
        retried, once per client request."""
        while True:
            response = await self.proxy._send(self._upstream(stream=stream), stream=True)
            if response.status_code < 400:
                self.rounds += 1
                return response
            await response.aread()
            if self.retried or not is_context_overflow(response.text):
                self.rounds += 1
                return response
            await response.aclose()
            self.retried = True
            await anyio.to_thread.run_sync(self._compact, response.text)

    def _compact(self, error: str) -> None:
        found = _WINDOW.search(error)
        window = int(found.group(1)) if found else _DEFAULT_WINDOW[self.api.provider]
        reserve = min(self.api.output_reserve(self.parsed), window // 2)
        compacted = self.proxy.ws.compact_turn(
            self.lean.result.messages,
            context_window=window,
            output_reserve=reserve,
            conversation_id=self.cid,
            force=True,
        )
        self.lean = render(
            self.api,
            self.parsed,
            self.prepared.match,
            self.lean.result,
            compacted.messages,
            self.prepared.tools,
        )

    def _decide(self, round: Round) -> tuple[list[Any], list[Any], bool]:
        """Our calls, the client's, and whether this round is the last."""
        ours = [c for c in round.calls if c.name in self.hidden]
        theirs = [c for c in round.calls if c.name not in self.hidden]
        for message in round.stored:
            self.parts += self.api.client_view(message, self.hidden)
        self.usage = add_usage(self.usage, round.usage)
        if self.group_id is None:
            body_id = (round.body or {}).get("id")
            self.group_id = (
                body_id if isinstance(body_id, str) else f"round-{len(self.prepared.match.stored)}"
            )
        last = (
            not ours
            or bool(theirs)
            or self.rounds > self.proxy.config.max_rounds
            or not self.api.continues(round)
        )
        return ours, theirs, last

    async def _answer(self, round: Round, ours: list[Any], *, last: bool) -> None:
        """Run our calls; their results go into the history (the next round's, or the next
        request's when the turn ends here)."""
        run = self.rounds <= self.proxy.config.max_rounds and self.api.continues(round)
        results = await anyio.to_thread.run_sync(
            lambda: run_calls(
                self.proxy.ws.home, self.cid, ours, run=run, store=self.proxy.ws.store_url
            )
        )
        messages = self.api.results(results)
        self._keep(round.stored, "round")
        self._keep(messages, "pending" if last else "results")
        if not last:
            self.extra += round_parts(self.api, [*round.stored, *messages])

    def _keep(self, messages: Sequence[Mapping[str, Any]], part: str) -> None:
        for message in messages:
            mark = {"response": self.group_id, "part": part, "own_id": "id" in message}
            self.group.append({**message, PROXY_KEY: mark})

    def _note(self, ours: list[Any], theirs: list[Any]) -> str | None:
        if ours and not theirs and self.rounds > self.proxy.config.max_rounds:
            return LIMIT_NOTE.format(rounds=self.proxy.config.max_rounds)
        return None

    async def _written(self) -> None:
        """Wait for the deferred write of the request's new messages, if any. A write that
        failed (another request of the conversation stored first, a full disk) changes
        nothing: the next request carries those messages again."""
        writing, self.writing = self.writing, None
        future = writing.start() if writing is not None else None
        if future is not None:
            with contextlib.suppress(WorkspaceError):
                await anyio.to_thread.run_sync(future.result)

    async def _store(self, round: Round, note: str | None) -> None:
        await self._written()
        if not self.group:
            return
        shown = self.parts + ([self.api.note_part(note)] if note else [])
        self.group[-1][PROXY_KEY]["view"] = self.api.view_messages(shown, round)
        group = self.group
        match = self.prepared.match
        after = len(match.stored)

        def store() -> None:
            try:
                ids = self.proxy.ws.extend(self.cid, group, after=after)
            except WorkspaceError:
                # Another request of this conversation stored first: its next request will
                # find the client's own copy of this answer instead (a fork, if it differs).
                return
            kept = [{**m, "id": i} for m, i in zip(group, ids, strict=True)]
            self.proxy.known.keep(self.cid, [*match.stored, *kept], self.prepared.chain)

        await anyio.to_thread.run_sync(store)

    # non-streaming

    async def complete(self) -> Response:
        while True:
            response = await self._call(stream=False)
            try:
                await response.aread()
            finally:
                await response.aclose()
            if response.status_code >= 400:
                return _passed(response)
            try:
                body = json.loads(response.content)
            except ValueError:
                return _passed(response)
            if not isinstance(body, dict):
                return _passed(response)
            round = self.api.parse_round(body)
            ours, theirs, last = self._decide(round)
            if not ours:
                if self.rounds == 1:
                    return _passed(response)  # the upstream's bytes, untouched
                self._keep(round.stored, "round")
            else:
                await self._answer(round, ours, last=last)
            if last or not ours:
                note = self._note(ours, theirs)
                await self._store(round, note)
                usage = self.usage if self.rounds > 1 else round.usage
                out = self.api.response_body(round, self.parts, usage, note)
                return Response(
                    json.dumps(out, ensure_ascii=False).encode(),
                    response.status_code,
                    headers=_pass_headers(response, keep_length=False),
                    media_type="application/json",
                )

    # streaming

    async def stream(self) -> Response:
        response = await self._call(stream=True)
        if response.status_code >= 400:
            return _passed(response)
        return StreamingResponse(
            self._writing_after_first(self._events(response)),
            status_code=response.status_code,
            headers=_pass_headers(response, keep_length=False),
        )

    async def _writing_after_first(
        self, chunks: AsyncGenerator[bytes, None]
    ) -> AsyncIterator[bytes]:
        async with contextlib.aclosing(chunks) as inner:
            async for chunk in inner:
                yield chunk
                self.start_writing()

    async def _events(self, response: httpx2.Response) -> AsyncGenerator[bytes, None]:
        previous: StreamTranslator | None = None
        try:
            while True:
                translator = self.api.translator(self.hidden, previous)
                async for event in events(response.aiter_bytes()):
                    if not event.data and event.event is None:
                        yield event.raw  # a comment or keep-alive
                        continue
                    for name, data in translator.feed(event.event, event.data):
                        yield (
                            event.raw
                            if data is event.data and name == event.event
                            else encode(name, data)
                        )
                await response.aclose()
                round = translator.round()
                ours, theirs, last = self._decide(round)
                if not ours:
                    if self.rounds == 1:
                        return
                    self._keep(round.stored, "round")
                else:
                    await self._answer(round, ours, last=last)
                if last or not ours:
                    note = self._note(ours, theirs)
                    # Stored before the closing events: a client that has the whole answer
                    # (and sends its next request, or goes away) finds the rounds stored.
                    await self._store(round, note)
                    for name, data in translator.finish(self.usage, note, self.rounds, self.parts):
                        yield encode(name, data)
                    return
                previous = translator
                response = await self._call(stream=True)
                if response.status_code >= 400:
                    await response.aread()
                    yield encode(*_stream_error(self.api, response))
                    return
        except ProxyError as refused:
            yield encode(*_stream_failure(self.api, refused.status, str(refused)))
        except httpx2.HTTPError as exc:
            message = (
                f"the upstream stream broke off ({type(exc).__name__}); the answer is "
                "incomplete, send the request again"
            )
            yield encode(*_stream_failure(self.api, 502, message))
        finally:
            await response.aclose()


def _passed(response: httpx2.Response) -> Response:
    """An upstream answer as it came: status, headers and body."""
    return Response(
        response.content,
        response.status_code,
        headers=_pass_headers(response, keep_length=False),
    )


def _stream_failure(api: Api, status: int, message: str) -> tuple[str | None, str]:
    body = api.error_body(status, message)
    if api.name == "anthropic":
        return "error", json.dumps(body, ensure_ascii=False)
    if api.name == "responses":
        return "error", json.dumps(
            {"type": "error", "code": None, "message": message, "param": None},
            ensure_ascii=False,
        )
    return None, json.dumps(body, ensure_ascii=False)


def _stream_error(api: Api, response: httpx2.Response) -> tuple[str | None, str]:
    """An upstream error met in a later round, as an event of the stream already under way."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if api.name == "anthropic" and isinstance(body, dict) and body.get("type") == "error":
        return "error", json.dumps(body, ensure_ascii=False)
    if api.name == "chat" and isinstance(body, dict) and "error" in body:
        return None, json.dumps(body, ensure_ascii=False)
    return _stream_failure(
        api,
        502,
        f"the upstream answered {response.status_code} in a retrieval round: {response.text[:300]}",
    )


def _collect_less() -> None:
    """The garbage collector of a proxy process: what startup made (modules, schemas, the
    app) moved out of its reach, and a young generation large enough for one request's
    parsed JSON. Otherwise its collections cost the proxy more CPU than its own work: a
    request allocates thousands of dicts and lists (freed by reference counting, not by it),
    and each full collection walks every object of the process."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, middle, old)


def serve(
    workspace: Workspace,
    config: ProxyConfig,
    host: str,
    port: int,
    *,
    announce: Callable[[str], None],
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve the proxy until interrupted; ``announce`` gets ``http://HOST:PORT`` once the
    server accepts connections."""
    import uvicorn

    sock = bind(host, port)
    port = sock.getsockname()[1]
    if config.http is None:
        config = dataclasses.replace(config, http=HttpPolicy.for_bind(host, port, allowed_hosts))
    server = uvicorn.Server(
        uvicorn.Config(proxy_app(workspace, config), log_level="warning", access_log=False)
    )
    shown = f"[{host}]" if ":" in host else host
    _collect_less()

    async def run() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            while not server.started:
                if server.should_exit:
                    return
                await anyio.sleep(0.01)
            announce(f"http://{shown}:{port}")

    anyio.run(run)
