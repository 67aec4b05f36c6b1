"""``--http HOST:PORT`` as the serve command takes it, and the bind rules of the HTTP faces."""

from __future__ import annotations

import click

from ._net import MIN_TOKEN_CHARS, is_loopback

__all__ = ["check_bind", "parse_address"]


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
