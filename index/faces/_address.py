"""``--http HOST:PORT`` as the serve command takes it, and the one bind, token and warning
policy of the HTTP faces (``serve --http``, ``serve --upstream --http``, ``view``)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import click

from ._net import MIN_TOKEN_CHARS, is_loopback

__all__ = ["Exposure", "check_bind", "expose", "parse_address"]

GENERATED_TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 43 chars, over MIN_TOKEN_CHARS


def parse_address(text: str) -> tuple[str, int]:
    """``"127.0.0.1:8765"`` -> ``("127.0.0.1", 8765)``; ``"[::1]:8765"`` -> ``("::1", 8765)``.

    Raises:
        click.ClickException: not HOST:PORT with a port from 1 to 65535.
    """
    host, _, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise click.ClickException(f"--http takes HOST:PORT such as 127.0.0.1:8765, got {text!r}")
    return host, int(port_text)


def check_bind(host: str, token: str | None, *, no_auth: bool, allow_remote: bool) -> bool:
    """Refuse what no HTTP face (``serve --http``, ``view``) may do; True for a loopback host.

    Raises:
        click.ClickException: a non-loopback host without ``--allow-remote``, ``--no-auth``
            off loopback, or a token shorter than `MIN_TOKEN_CHARS`.
    """
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise click.ClickException(
            f"{host} is not a loopback address; bind 127.0.0.1, or pass --allow-remote"
        )
    if no_auth and not loopback:
        raise click.ClickException(
            f"--no-auth serves anyone who reaches {host}; it is allowed only on a loopback "
            "address. Drop --no-auth (a token is generated) or bind 127.0.0.1"
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise click.ClickException(
            f"the token has {len(token)} chars, fewer than {MIN_TOKEN_CHARS}; use a long "
            "random one (openssl rand -hex 32), or give none to have one generated"
        )
    return loopback


@dataclass(frozen=True)
class Exposure:
    """How an HTTP face serves: the token it requires (None: ``--no-auth``, loopback only),
    whether it generated that token (the face prints it once), and the warning to print
    when the address reaches beyond this machine."""

    token: str | None
    generated: bool
    warning: str | None


def expose(
    host: str,
    token: str | None,
    *,
    no_auth: bool,
    allow_remote: bool,
    grants: str,
    token_on_loopback: bool = True,
) -> Exposure:
    """The policy of every HTTP face: the bind rules of `check_bind`, a generated token when
    none is given (unless ``--no-auth``, or on loopback without ``token_on_loopback``), and
    a warning off loopback saying what anyone with the token ``grants``.

    Raises:
        click.ClickException: what `check_bind` refuses.
    """
    loopback = check_bind(host, token, no_auth=no_auth, allow_remote=allow_remote)
    needed = not no_auth and (token_on_loopback or not loopback)
    generated = token is None and needed
    if generated:
        token = secrets.token_urlsafe(GENERATED_TOKEN_BYTES)
    warning = None
    if not loopback:
        warning = (
            f"warning: serving on {host}, beyond this machine: anyone who can reach it and "
            f"holds the token {grants}; the traffic is plain HTTP, so prefer an SSH tunnel "
            "or a TLS proxy"
        )
    return Exposure(None if no_auth else token, generated, warning)
