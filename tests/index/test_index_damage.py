"""Damaged Tantivy indexes: random bytes in a segment file make tantivy raise, or panic (pyo3's
PanicException, a BaseException). Neither may escape a tool call: the index is rebuilt from
its source (the store, the PDF) and the call answers as if nothing happened."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from leanreplay.index import Workspace
from leanreplay.index.search._convindex import MESSAGES_VERSION
from tests import pdfgen
from tests.builders import user

EXTENSIONS = ["fast", "fieldnorm", "idx", "pos", "store", "term"]


def _damage(directory: Path, ext: str, seed: int) -> None:
    rng = random.Random(seed)
    for segment in sorted(directory.glob(f"*.{ext}")):
        data = bytearray(segment.read_bytes())
        start = rng.randrange(max(1, len(data) // 2))
        for i in range(start, min(len(data), start + 64)):
            data[i] = rng.randrange(256)
        segment.write_bytes(bytes(data))


def _hits(result: dict[str, object]) -> list[tuple[object, ...]]:
    return [(h["conversation_id"], h["message_id"], h["snippet"]) for h in result["hits"]]  # type: ignore[attr-defined,index]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[object, ...]]]:
    home = tmp_path_factory.mktemp("pristine")
    log = home / "c1.jsonl"
    log.write_text(
        "".join(
            json.dumps(user(f"hello world message number {i} budget word{i * 7}")) + "\n"
            for i in range(3000)
        )
    )
    with Workspace(home) as ws:
        ws.ingest(log, conversation_id="c1")
        expected = _hits(ws.conversation_search("budget word21"))
    assert expected
    return home, expected


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ext", EXTENSIONS)
def test_a_damaged_message_index_is_rebuilt_and_the_search_answers(
    tmp_path: Path, pristine: tuple[Path, list[tuple[object, ...]]], ext: str, seed: int
) -> None:
    base, expected = pristine
    home = tmp_path / "home"
    shutil.copytree(base, home)
    _damage(home / "index" / f"messages-v{MESSAGES_VERSION}", ext, seed)
    with Workspace(home) as ws:
        first = ws.conversation_search("budget word21")
        again = ws.conversation_search("budget word21")
    assert _hits(again) == expected
    assert _hits(first) == expected


@pytest.fixture(scope="module")
def pristine_pages(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[dict[str, object]]]:
    base = tmp_path_factory.mktemp("pages")
    (base / "root").mkdir()
    pdfgen.write_pdf(str(base / "root" / "a.pdf"), 300)
    with Workspace(base / "home", [base / "root"]) as ws:
        expected = ws.pdf_search("a.pdf", "marker00123 revenue")["hits"]
    assert expected[0]["page"] == 123
    return base, expected


# Seeds that made tantivy panic (fast 34, term 9) or raise (term 10) before the fix, and
# one of each other file kind.
PAGE_DAMAGE = [("fast", 34), ("term", 9), ("term", 10), *((ext, 0) for ext in EXTENSIONS)]


@pytest.mark.parametrize(("ext", "seed"), PAGE_DAMAGE)
def test_a_damaged_page_index_is_rebuilt_from_the_pdf(
    tmp_path: Path, pristine_pages: tuple[Path, list[dict[str, object]]], ext: str, seed: int
) -> None:
    base, expected = pristine_pages
    shutil.copytree(base, tmp_path / "copy")
    _damage(tmp_path / "copy" / "home" / "index" / "pages-v1", ext, seed)
    with Workspace(tmp_path / "copy" / "home", [tmp_path / "copy" / "root"]) as ws:
        hits = ws.pdf_search("a.pdf", "marker00123 revenue")["hits"]
        page = ws.pdf_read("a.pdf", "123")["pages"][0]["text"]
    assert page.startswith("page123 marker00123")
    # Damage tantivy does not see (a flipped norm) may move scores, never pages or text.
    assert [(h["page"], h["snippet"]) for h in hits] == [
        (h["page"], h["snippet"]) for h in expected
    ]


def test_a_store_restored_from_a_backup_rebuilds_the_message_index(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Workspace(home) as ws:
        for i in range(5):
            ws.append("c1", user(f"kept message {i}"))
        backup = sqlite3.connect(tmp_path / "backup.sqlite3")
        with closing(sqlite3.connect(home / "store.sqlite3")) as live:
            live.backup(backup)
        backup.close()
        for i in range(5):
            ws.append("c1", user(f"vanished message {i}"))
        assert len(ws.conversation_search("vanished")["hits"]) == 5
    for suffix in ("", "-wal", "-shm"):
        (home / f"store.sqlite3{suffix}").unlink(missing_ok=True)
    shutil.copy(tmp_path / "backup.sqlite3", home / "store.sqlite3")
    with Workspace(home) as ws:
        for i in range(7):  # rows 6-12 now: the old index knew rows 1-10
            ws.append("c1", user(f"arrived message {i}"))
        assert ws.conversation_search("vanished")["hits"] == []
        hits = ws.conversation_search("arrived")["hits"]
        assert {h["message_id"] for h in hits} == {f"m{i}" for i in range(6, 13)}
        for hit in hits:
            text = ws.conversation_read("c1", hit["message_id"])["content"]
            assert text.startswith("arrived")


def test_a_sound_index_is_kept_when_it_opens_again(
    tmp_path: Path, pristine: tuple[Path, list[tuple[object, ...]]]
) -> None:
    # The checksums verified at open must pass on an index as Tantivy wrote it: a false alarm
    # would rebuild the index at every open (new segment files each time).
    base, expected = pristine
    home = tmp_path / "home"
    shutil.copytree(base, home)
    folder = home / "index" / f"messages-v{MESSAGES_VERSION}"
    before = sorted(p.name for p in folder.iterdir())
    assert any(name.endswith(".fast") for name in before)
    for _ in range(2):
        with Workspace(home) as ws:
            assert _hits(ws.conversation_search("budget word21")) == expected
        assert sorted(p.name for p in folder.iterdir()) == before
