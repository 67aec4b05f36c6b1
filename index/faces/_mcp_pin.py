"""Which mcp releases `leanreplay serve` runs on, and what to say when another package pulled
in one outside them: pip checks no extra's pins, so installing (say) langchain-mcp-adapters
0.3.2 after ``leanreplay[mcp]`` downgrades mcp to 1.x without a word."""

from __future__ import annotations

import importlib.metadata
import re

__all__ = ["MCP_SUPPORTED", "mcp_conflict"]

# The mcp releases the server is written for: the `mcp` extra's pin in pyproject.toml.
MCP_SUPPORTED = ((2, 3), (3,))


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"[0-9]+", version.split("+")[0])[:3])


def mcp_conflict() -> str | None:
    """Why the installed mcp cannot run the server (another package pulled in a release
    outside the extra's pin, which pip does not check), or None."""
    try:
        installed = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return None  # not installed at all: the import says so
    low, high = MCP_SUPPORTED
    if low <= _release(installed) < high:
        return None
    pins = []
    for dist in importlib.metadata.distributions():
        for req in dist.requires or ():
            match = re.match(r"mcp\s*(\(?[<>=!~][^;]*)", req)
            if match is None:
                continue
            caps = [_release(v) for v in re.findall(r"<=?\s*([0-9][0-9.]*)", match.group(1))]
            if any(cap <= low for cap in caps):
                spec = match.group(1).strip("() ")
                pins.append(f"{dist.metadata['Name']} {dist.version} requires mcp{spec}")
    why = f" ({'; '.join(sorted(set(pins)))})" if pins else ""
    return (
        f"`leanreplay serve` needs mcp>=2.3,<3, but mcp {installed} is installed{why}; "
        "serve from a virtual environment of its own (python3 -m venv leanreplay-env && "
        "leanreplay-env/bin/pip install 'leanreplay[mcp]'), or reinstall here with: "
        "pip install 'leanreplay[mcp]' (which breaks what requires the older mcp)"
    )
