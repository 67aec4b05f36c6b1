"""The public API is complete: what a public method returns or raises can be named from a
public module, and the workspace's parts stay behind its methods."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest

import leanreplay
from leanreplay import cards, index, placeholders

# The classes and functions a user can import by a public name.
PUBLIC = {
    obj
    for module in (leanreplay, cards, placeholders, index)
    for obj in (getattr(module, name) for name in module.__all__)
    if inspect.isclass(obj) or inspect.isfunction(obj)
}


def _ours(tp: Any) -> set[type]:
    """The classes of this package a type annotation names, at any depth."""
    found: set[type] = set()
    if inspect.isclass(tp) and tp.__module__.startswith("leanreplay"):
        found.add(tp)
    for arg in typing.get_args(tp):
        found |= _ours(arg)
    return found


def _methods() -> list[tuple[str, Any]]:
    classes = [index.Workspace, index.CapabilityIndex, placeholders.PairWindow]
    return [
        (f"{cls.__name__}.{name}", fn)
        for cls in classes
        for name, fn in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    ]


@pytest.mark.parametrize(("name", "fn"), _methods(), ids=[n for n, _ in _methods()])
def test_what_a_method_returns_is_public(name: str, fn: Any) -> None:
    hints = typing.get_type_hints(fn, include_extras=True)
    for cls in _ours(hints.get("return")):
        assert cls in PUBLIC, f"{name} returns {cls.__qualname__}, which no public module exports"


@pytest.mark.parametrize(("name", "fn"), _methods(), ids=[n for n, _ in _methods()])
def test_what_a_method_raises_is_public(name: str, fn: Any) -> None:
    doc = inspect.getdoc(fn) or ""
    raises = doc.split("Raises:", 1)[1] if "Raises:" in doc else ""
    named = {m for m in re.findall(r"^\s+(\w+Error)\b", raises, re.MULTILINE)}
    public_names = {getattr(p, "__name__", None) for p in PUBLIC}
    assert named <= public_names, f"{name} raises {named - public_names}, not exported"


def test_the_types_users_meet_are_exported() -> None:
    for name in (
        "CapabilityIndex",
        "Capability",
        "SizePoint",
        "ConversationStats",
        "NotALogError",
        "LoadedConversation",
        "load_log",
    ):
        assert name in index.__all__, name
    assert "InvalidPolicyError" in placeholders.__all__


def test_the_log_loader_reads_without_storing(tmp_path: Path) -> None:
    from tests.conftest import SAMPLES

    (loaded,) = index.load_log(SAMPLES / "conversation.jsonl")
    assert isinstance(loaded, index.LoadedConversation)
    assert (loaded.conversation_id, loaded.format) == ("conversation", "anthropic")
    assert len(loaded.messages) == 8
    junk = tmp_path / "junk.json"
    junk.write_text('{"neither": "log"}')
    with pytest.raises(index.NotALogError):
        index.load_log(junk)


def test_formats_say_which_formats_they_are() -> None:
    # Three different sets: what ingest reads, what tool_schemas writes, what for_provider
    # sends. None of them is a bare FORMATS any more.
    assert "claude-code" in index.LOG_FORMATS
    assert "mcp" not in index.LOG_FORMATS
    assert index.SCHEMA_FORMATS == ("openai", "openai-responses", "anthropic", "mcp")
    assert set(placeholders.PROVIDERS) == {"openai", "anthropic", "openai-responses"}
    assert not hasattr(index, "FORMATS")


def test_the_store_is_behind_the_workspace(tmp_path: Path) -> None:
    with index.Workspace(tmp_path) as ws:
        assert not hasattr(ws, "store")
        public = {n for n in vars(ws) if not n.startswith("_")}
        assert public == {
            "home",
            "attachments_dir",
            "members_dir",
            "notices",
            "allowed",
            "store_url",  # the URL of a shared store (None: the home's), not the store
        }
