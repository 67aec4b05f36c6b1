"""What production does to files while the file tools read them: truncation under a reader,
same-shape rewrites, several threads sharing one Workspace."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from leanreplay.index import Workspace
from leanreplay.index.search import _pdfindex
from leanreplay.index.tools._images import MAX_DECODE_BYTES
from leanreplay.index.tools._pdftext import MAX_PAGE_CHARS, PAGE_CUT_NOTE
from tests import pdfgen

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")

LINES = 400_000  # ~10 MB: a scan takes long enough for the writer to cut it short


def _generation(g: int) -> bytes:
    # Line lengths differ between generations, so an index of one generation numbers the
    # lines of another wrongly: a stale index cannot hide behind equal offsets.
    pad = "x" * (g % 5)
    return "".join(f"g{g:04d} line {n:08d}{pad}\n" for n in range(1, LINES + 1)).encode()


# Reads in a process of its own: before the fix a SIGBUS killed it (exit -7).
READER = r"""
import json, random, re, shutil, sys, time
sys.path.insert(0, sys.argv[1])
from leanreplay.index import Workspace, WorkspaceError
home, root, seconds = sys.argv[2], sys.argv[3], float(sys.argv[4])
line = re.compile(r"g\d{4} line (\d{8})x*")
partial = re.compile(r"(g\d{0,4}( (l(i(n(e( \d{0,8}x*)?)?)?)?)?)?)?")
rng = random.Random(7)
report = {"answers": 0, "errors": 0, "wrong": [], "messages": set()}
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    shutil.rmtree(home + "/lines", ignore_errors=True)  # every call builds its index anew
    with Workspace(home, [root]) as ws:
        start = rng.randrange(1, 390_000)
        try:
            result = ws.file_read("app.log", start_line=start, end_line=start + 40)
        except WorkspaceError as exc:
            report["errors"] += 1
            report["messages"].add(str(exc).split(":")[0][:120])
            continue
    report["answers"] += 1
    rows = result["content"].split("\n") if result["content"] else []
    for i, row in enumerate(rows):
        number, _, text = row.partition("\t")
        m = line.fullmatch(text)
        last = i == len(rows) - 1
        if m is None and last and partial.fullmatch(text):
            continue  # the writer's newest, partly written line: right for that moment
        if m is None or int(m.group(1)) != int(number):
            report["wrong"].append(row[:80])
report["messages"] = sorted(report["messages"])
print(json.dumps(report))
"""


def test_a_log_truncated_and_refilled_under_reads_never_kills_or_misnumbers(
    tmp_path: Path,
) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    log = root / "app.log"
    log.write_bytes(_generation(0))
    stop = threading.Event()

    def rotate() -> None:  # logrotate's copytruncate, then the application writes on
        fd = os.open(log, os.O_WRONLY)
        g = 0
        try:
            while not stop.is_set():
                g += 1
                data = _generation(g)  # every generation is new, as a log's lines are
                os.ftruncate(fd, 0)
                for at in range(0, len(data), 1 << 20):
                    os.pwrite(fd, data[at : at + (1 << 20)], at)
        finally:
            os.close(fd)

    writer = threading.Thread(target=rotate)
    writer.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", READER, str(REPO), str(home), str(root), "6"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        stop.set()
        writer.join()
    assert proc.returncode == 0, f"reader died with {proc.returncode}: {proc.stderr[-2000:]}"
    report = json.loads(proc.stdout)
    assert report["wrong"] == [], report
    assert report["answers"] + report["errors"] > 0
    for message in report["messages"]:
        assert re.search(r"truncated or rewritten|is past the end", message), message


def _rewrite_same_shape(path: Path, old: bytes, new: bytes) -> None:
    """Rewrite ``path`` in place with ``new`` (same size as ``old``) and set its mtime back,
    as a tool that preserves timestamps would; only the ctime (which no one can set) moves."""
    assert len(old) == len(new)
    assert old != new
    before = path.stat()
    while True:
        with path.open("r+b") as f:
            f.write(new)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        now = path.stat()
        if now.st_ctime_ns != before.st_ctime_ns:  # coarse clocks: rewrite until it ticks
            break
    assert (now.st_size, now.st_mtime_ns, now.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )


def test_file_read_sees_a_same_size_same_mtime_rewrite(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    path = root / "data.txt"
    # The first 70 KB and the last 300 KB stay the same (every fingerprint of edges sees
    # them unchanged); the middle changes its line structure.
    edge = b"e" * 99 + b"\n"
    old = edge * 700 + b"a\n" * 500_000 + edge * 3000
    new = edge * 700 + b"bbb\n" * 250_000 + edge * 3000
    path.write_bytes(old)
    with Workspace(tmp_path / "home", [root]) as ws:
        assert ws.file_read("data.txt", start_line=800, end_line=800)["content"] == "800\ta"
        assert ws.file_read("data.txt", start_line=503_700)["total_lines"] == 503_700
    _rewrite_same_shape(path, old, new)
    with Workspace(tmp_path / "home", [root]) as ws:
        assert ws.file_read("data.txt", start_line=800, end_line=800)["content"] == "800\tbbb"
        assert ws.file_read("data.txt", start_line=253_700)["total_lines"] == 253_700


def test_pdf_tools_see_a_same_size_same_mtime_rewrite(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    path = root / "doc.pdf"
    pdfgen.write_pdf(str(path), 200)
    old = path.read_bytes()
    new = old.replace(b"marker00100", b"zucchini100")
    with Workspace(tmp_path / "home", [root]) as ws:
        assert ws.pdf_search("doc.pdf", "marker00100")["hits"][0]["page"] == 100
    _rewrite_same_shape(path, old, new)
    with Workspace(tmp_path / "home", [root]) as ws:
        assert [h["page"] for h in ws.pdf_search("doc.pdf", "zucchini100")["hits"]] == [100]
        assert "zucchini100" in ws.pdf_read("doc.pdf", "100")["pages"][0]["text"]


def test_file_search_from_line_2_after_an_empty_first_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(b"\nneedle two\nhay\nneedle four\n")
    with Workspace(tmp_path / "home", [root]) as ws:
        hits = ws.file_search("a.txt", "needle", start_line=2)["hits"]
    assert hits == [{"line": 2, "text": "needle two"}, {"line": 4, "text": "needle four"}]


def _in_threads(count: int, fn: Callable[[], T]) -> list[T | BaseException]:
    barrier = threading.Barrier(count)
    results: list[T | BaseException] = [RuntimeError("not run")] * count

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_first_reads_of_a_utf16_file_from_8_threads_all_answer(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    lines = [f"zeile {i} äöü" for i in range(20_000)]
    (root / "ps.txt").write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-16"))
    with Workspace(tmp_path / "home", [root]) as ws:
        results = _in_threads(8, lambda: ws.file_read("ps.txt", start_line=19_999)["content"])
    assert results == ["19999\tzeile 19998 äöü\n20000\tzeile 19999 äöü"] * 8


@pytest.mark.parametrize("trial", range(3))
def test_a_new_pdf_searched_from_6_threads_gives_all_the_same_hits(
    tmp_path: Path, trial: int
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    pdfgen.write_pdf(str(root / "new.pdf"), 150 + trial)
    with Workspace(tmp_path / "home", [root]) as ws:
        results = _in_threads(6, lambda: ws.pdf_search("new.pdf", "marker00077"))
    answers = [
        (r["indexed_now"], [h["page"] for h in r["hits"]]) if isinstance(r, dict) else r
        for r in results
    ]
    assert sorted(answers, key=repr) == [(False, [77])] * 5 + [(True, [77])], (
        "one thread indexes the file, the other five wait for it"
    )


def test_a_pdf_text_bomb_is_indexed_within_limits_and_says_what_was_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 5,000 pages sharing one 198k-char content stream: ~990M chars if extracted whole.
    root = tmp_path / "root"
    root.mkdir()
    (root / "bomb.pdf").write_bytes(pdfgen.text_bomb(5000, 198_000))
    monkeypatch.setattr(_pdfindex, "MAX_INDEX_SECONDS", 1.0)  # the limit, made test-sized
    indexed = re.compile(r"pages 1-([\d,]+) of 5,000 are indexed so far")
    with Workspace(tmp_path / "home", [root]) as ws:
        first = ws.pdf_search("bomb.pdf", "alpha")
        second = ws.pdf_search("bomb.pdf", "alpha")
        page = ws.pdf_read("bomb.pdf", "4321")["pages"][0]["text"]
    reached = []
    for result in (first, second):
        assert result["indexed_now"]
        assert result["hits"]
        cut, progress = result["notes"]
        assert "had more than 32,000 chars of text and were cut there (the first: page 1)" in cut
        match = indexed.search(progress)
        assert match, progress
        reached.append(int(match.group(1).replace(",", "")))
        assert all(hit["page"] <= reached[-1] for hit in result["hits"])
    assert 0 < reached[0] < reached[1] < 5000, "the second search continues the first"
    assert len(page) <= MAX_PAGE_CHARS + len(PAGE_CUT_NOTE)
    assert page.endswith(PAGE_CUT_NOTE)


def _png16(path: Path, width: int, height: int) -> None:
    """A 16-bit greyscale PNG written row by row (a few hundred KB on disk)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    row = b"\x00" + (bytes(range(256)) * (width * 2 // 256 + 1))[: width * 2]
    comp = zlib.compressobj(9)
    data = b"".join(comp.compress(row) for _ in range(height)) + comp.flush()
    header = struct.pack(">IIBBBBB", width, height, 16, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


VIEWER = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from leanreplay.index import Workspace
ws = Workspace(sys.argv[2], [sys.argv[3]])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = ws.image_view("deep.png", max_side=512)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"size": [result["width"], result["height"]], "grown_kib": grown}))
"""


def test_a_7999_square_16_bit_png_is_shown_in_bounded_memory(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _png16(root / "deep.png", 7999, 7999)
    proc = subprocess.run(
        [sys.executable, "-c", VIEWER, str(REPO), str(tmp_path / "home"), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["size"] == [512, 512]
    # The frame itself is 128 MB (2 bytes a pixel); the budget bounds everything around it.
    assert report["grown_kib"] * 1024 < MAX_DECODE_BYTES, report
