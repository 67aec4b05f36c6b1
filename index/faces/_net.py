"""Address rules shared by the HTTP faces (the MCP server and the web view)."""

from __future__ import annotations

import ipaddress

__all__ = ["MIN_TOKEN_CHARS", "is_loopback"]

MIN_TOKEN_CHARS = 32  # a bearer token is the only lock on the HTTP face: no short ones


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1, ``[::1]``)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
