"""The Tantivy indexes under several processes: one writer at a time, nothing lost or doubled,
and a writer killed with SIGKILL leaves an index the next process recovers from."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import tantivy

from leanreplay.index import Workspace
from leanreplay.index.search._pdfindex import PageIndex
from leanreplay.index.tools._paths import fingerprint, open_confined
from tests import pdfgen
from tests.builders import user

REPO = Path(__file__).resolve().parents[2]


def _search_pdf(home: str, root: str, name: str, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    with Workspace(home, [root]) as ws:
        result = ws.pdf_search(name, "marker00033")
        queue.put((result["indexed_now"], result["hits"][0]["page"]))


def _page_docs(home: Path, root: Path, name: str) -> int:
    index = PageIndex(str(home))
    with open_confined(name, [str(root)]) as f:
        file_id = fingerprint(f)
    searcher = index.index.searcher()
    query = tantivy.Query.term_query(index.index.schema, "file_id", file_id)
    return int(searcher.search(query, limit=1, count=True).count)


def test_two_processes_indexing_the_same_pdf_neither_lose_nor_double(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    pdfgen.write_pdf(str(root / "a.pdf"), 120)
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [
        ctx.Process(target=_search_pdf, args=(str(tmp_path / "home"), str(root), "a.pdf", queue))
        for _ in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    results = [queue.get(timeout=5) for _ in procs]
    assert [page for _, page in results] == [33, 33]
    assert any(now for now, _ in results)
    assert _page_docs(tmp_path / "home", root, "a.pdf") == 121  # 120 pages + one manifest


def test_readers_search_while_another_thread_commits(tmp_path: Path) -> None:
    with Workspace(tmp_path / "home") as ws:
        ws.append("c", user("alpha beta"))
        ws.conversation_search("alpha")
        stop = threading.Event()
        errors: list[BaseException] = []

        def reader() -> None:
            while not stop.is_set():
                try:
                    assert ws.conversation_search("alpha")["hits"]
                except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
                    errors.append(exc)
                    return

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for i in range(40):
            ws.append("c", user(f"gamma {i}"))
            assert ws.conversation_search(f"gamma {i}")["hits"]
        stop.set()
        for t in threads:
            t.join(30)
        assert errors == []
        assert len(ws.conversation_search("gamma", limit=50)["hits"]) == 40


KILLED_INDEXER = """
import sys, time
from leanreplay.index import Workspace
from leanreplay.index.search import _tantivy

original = _tantivy.DerivedIndex.writer
def slow_writer(self):
    cm = original(self)
    class Slow:
        def __enter__(inner):
            writer = cm.__enter__()
            print("writing", flush=True)
            time.sleep(60)  # killed here, mid-batch, holding the writer
            return writer
        def __exit__(inner, *exc):
            return cm.__exit__(*exc)
    return Slow()
_tantivy.DerivedIndex.writer = slow_writer
with Workspace(sys.argv[1], [sys.argv[2]]) as ws:
    ws.pdf_search("k.pdf", "marker00002")
"""


def test_sigkill_mid_batch_then_the_next_process_recovers(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    pdfgen.write_pdf(str(root / "k.pdf"), 40)
    home = tmp_path / "home"
    with Workspace(home, [root]) as ws:  # acknowledged data before the crash
        ws.append("keep", user("acknowledged before the crash"))
        assert ws.conversation_search("acknowledged")["hits"]
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_INDEXER, str(home), str(root)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    started = time.monotonic()
    with Workspace(home, [root]) as ws:
        result = ws.pdf_search("k.pdf", "marker00002")
        assert result["indexed_now"] is True  # the killed batch never committed a manifest
        assert result["hits"][0]["page"] == 2
        assert ws.conversation_search("acknowledged")["hits"][0]["conversation_id"] == "keep"
    assert time.monotonic() - started < 30, "the lock of the killed writer was not released"
    assert _page_docs(home, root, "k.pdf") == 41
