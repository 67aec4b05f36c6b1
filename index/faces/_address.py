"""``--http HOST:PORT`` as the serve command takes it."""

from __future__ import annotations

import click

__all__ = ["parse_address"]


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
