"""Module docstrings that quote a limit agree with the constant that holds it, name only
constants that exist, and point at nothing a user of the repository does not have."""

from __future__ import annotations

import ast
import importlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

PACKAGES = ("cards", "placeholders", "index")


def _modules() -> list[tuple[str, Path]]:
    out = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out.append((name, path))
    return out


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""


# (module, a phrase of its docstring with the number in a group, what the number must be)
QUOTED: list[tuple[str, str, Callable[[ModuleType], object]]] = [
    ("leanreplay.index.tools._lines", r"newlines per (\d+) KiB block", lambda m: m.BLOCK // 1024),
    ("leanreplay.index.tools._lines", r"in (\d+) MiB chunks", lambda m: m.CHUNK // (1024 * 1024)),
    ("leanreplay.placeholders._compact", r"``chars / ([\d.]+)``", lambda m: m.CHARS_PER_TOKEN),
    (
        "leanreplay.placeholders._compact",
        r"above (\d+)% of the input",
        lambda m: m.TRIGGER_SHARE * 100,
    ),
    ("leanreplay.placeholders._compact", r"compact toward (\d+)%", lambda m: m.TARGET_SHARE * 100),
    ("leanreplay.placeholders._compact", r"the last (\d+) messages", lambda m: m.PROTECTED_TAIL),
    ("leanreplay.cards._table", r"from the first (\d+) KiB", lambda m: m.CSV_HEAD_BYTES // 1024),
    (
        "index",
        r"a page of ([\d,]+) chars at a time",
        lambda m: importlib.import_module("leanreplay.index._limits").MAX_ANSWER_CHARS,
    ),
]


@pytest.mark.parametrize(
    ("module", "phrase", "value"), QUOTED, ids=[f"{m}:{p}" for m, p, _ in QUOTED]
)
def test_a_number_a_docstring_quotes_is_the_constant(
    module: str, phrase: str, value: Callable[[ModuleType], object]
) -> None:
    loaded = importlib.import_module(module)
    match = re.search(phrase, loaded.__doc__ or "")
    assert match, f"{module}'s docstring no longer says {phrase!r}: update QUOTED"
    assert float(match.group(1).replace(",", "")) == value(loaded), (module, match.group())


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_constants_a_docstring_names_exist(module: str, path: Path) -> None:
    loaded = importlib.import_module(module)
    for name in re.findall(r"`+([A-Z][A-Z0-9_]+)`+", _docstring(path)):
        assert hasattr(loaded, name) or hasattr(os, name), f"{module} docstring names {name}"


def test_no_docstring_points_at_a_spec_file_the_repository_does_not_hold() -> None:
    # The project spec lives outside the repository: say what it says instead.
    found = [
        f"{path.relative_to(REPO)}:{n}"
        for folder in (*PACKAGES, "tests", "bench")
        for path in sorted((REPO / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bSPEC(\.md)?\b", line)
    ]
    assert not found, found
