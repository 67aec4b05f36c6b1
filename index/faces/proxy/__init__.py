"""A transparent proxy in front of the Anthropic and OpenAI APIs: lean replays for clients
whose loop leanreplay does not own (Claude Code, Codex CLI, any SDK client).

    >>> from leanreplay.index import Workspace
    >>> from leanreplay.index.faces.proxy import ProxyConfig, proxy_app
    >>> app = proxy_app(Workspace(home), ProxyConfig("https://api.anthropic.com"))

``leanreplay proxy --upstream URL`` serves it. Needs the ``proxy`` extra (starlette,
uvicorn, httpx2).
"""

from ._app import (
    BODY_TIMEOUT_S,
    MAX_REQUEST_BYTES,
    MAX_ROUNDS,
    TOKEN_HEADER,
    ProxyConfig,
    proxy_app,
    serve,
)
from ._conversation import FAMILY_HEADER, PROXY_KEY

__all__ = [
    "BODY_TIMEOUT_S",
    "FAMILY_HEADER",
    "MAX_REQUEST_BYTES",
    "MAX_ROUNDS",
    "PROXY_KEY",
    "TOKEN_HEADER",
    "ProxyConfig",
    "proxy_app",
    "serve",
]
