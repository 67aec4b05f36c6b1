"""The cyclic collector stays off while a log is imported, and is back as it was after."""

from __future__ import annotations

import base64
import gc
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanreplay.index import Workspace
from leanreplay.index._gcpause import gc_paused
from tests.conftest import SAMPLES


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations the collector walks, in order, while the test runs."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def _log(path: Path, count: int) -> Path:
    lines = [
        json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"})
        for i in range(count)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_import_runs_no_collection_and_leaves_the_collector_on(
    tmp_path: Path, collections: list[int]
) -> None:
    # 20,000 messages allocate far past the 700 objects that start a young collection.
    log = _log(tmp_path / "big.jsonl", 20_000)
    with Workspace(tmp_path / "home") as ws:
        gc.collect()
        collections.clear()
        report = ws.ingest(log)
        during = list(collections)
        assert gc.isenabled()
        # Without the pause, the same allocations walk the young generation again and again.
        _ = [[i] for i in range(20_000)]
    assert report.files[0].added == 20_000
    # At most the one that catches up when the collector comes back on, at the end; unpaused
    # the import starts well over a hundred.
    assert len(during) <= 1
    assert collections != []


def test_an_import_leaves_a_collector_the_caller_turned_off_off(tmp_path: Path) -> None:
    log = _log(tmp_path / "small.jsonl", 10)
    gc.disable()
    try:
        with Workspace(tmp_path / "home") as ws:
            ws.ingest(log)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_import_that_raises_inside_the_pause_turns_the_collector_back_on(
    tmp_path: Path,
) -> None:
    # The progress callback runs inside the pause (a refused file does not: its error is
    # raised after the import's loop); an exception from it ends the pause all the same.
    log = _log(tmp_path / "small.jsonl", 10)

    def stop(done: int, total: int, path: str) -> None:
        assert not gc.isenabled()
        raise KeyboardInterrupt

    with Workspace(tmp_path / "home") as ws, pytest.raises(KeyboardInterrupt):
        ws.ingest(log, progress=stop)
    assert gc.isenabled()


def test_cycles_an_attachments_card_leaves_do_not_pile_up_during_an_import(
    tmp_path: Path,
) -> None:
    # An xlsx card parses its XML with defusedxml's iterparse, which leaves ~350 objects in
    # cycles a card. With the collector off before the import (so the pause leaves it off),
    # what is unreachable after it is what the import let pile up: the young collection
    # after each attachment keeps that to the last card's.
    data = base64.b64encode((SAMPLES / "sales.xlsx").read_bytes()).decode()
    media = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    lines = []
    for i in range(40):
        block = {
            "type": "file",
            "file": {"filename": f"s{i}.xlsx", "file_data": f"data:{media};base64,{data}"},
        }
        lines.append(
            json.dumps({"role": "user", "content": [{"type": "text", "text": f"see {i}"}, block]})
        )
        lines.append(json.dumps({"role": "assistant", "content": f"ok {i}"}))
    log = tmp_path / "sheets.jsonl"
    log.write_text("\n".join(lines) + "\n")
    with Workspace(tmp_path / "home") as ws:
        gc.collect()
        gc.disable()
        try:
            ws.ingest(log)
            left = gc.collect()
        finally:
            gc.enable()
    assert left < 2_000  # 40 cards' cycles would be over 12,000 objects


def test_overlapping_pauses_end_with_the_collector_on() -> None:
    # Thread A pauses, B pauses, A ends: B still runs paused; the collector is on again only
    # when B ends too.
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    states: dict[str, bool] = {}

    def first() -> None:
        with gc_paused():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def second() -> None:
        a_in.wait(5)
        with gc_paused():
            b_in.set()
            a_out.wait(5)
            states["after the first ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert states == {"after the first ended": False}
    assert gc.isenabled()
