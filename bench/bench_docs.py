"""Documents at size: a generated docx of about 200 MB of XML and a 5,000-slide deck.

- card: `card_for` time and tracemalloc peak (the reading budget keeps both flat);
- doc_read of the first 20 parts and of parts in the middle (a streamed pass up to there);
- doc_search: first call (extracts and indexes every part) and a warm query;
- peers in the same run: python-docx-free baselines, zipfile reading the whole
  word/document.xml into memory and ElementTree parsing it (what a naive reader does);
- issue 20's floor: doc_read of the last 20 parts of a 78 MB docx of varied text against
  python-docx (``Document(path).paragraphs[-20:]``) on the same file, interleaved, with the
  median of paired ratios, CPU seconds and the load (``--large-docx`` runs only this).

    python bench/bench_docs.py [--large-docx]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
import tracemalloc
import zipfile
from pathlib import Path
from xml.etree import ElementTree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._docx import docx_body
from bench._paired import Paired
from leanreplay.cards import card_for
from leanreplay.index import Workspace
from tests import officegen


def timed(fn, repeat: int = 1):  # type: ignore[no-untyped-def]
    times = []
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return result, statistics.median(times)


def peak(fn):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def varied_docx(path: Path, target_bytes: int, seed: int = 7) -> int:
    """A docx of about ``target_bytes`` whose paragraphs are random words (so it compresses
    like prose, not like one repeated sentence), a heading every 40; returns the part count.
    Written as a stream: memory stays flat whatever the size."""
    import random
    from xml.sax.saxutils import escape

    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 11))) for _ in range(20000)]
    count = 0
    with docx_body(path, declaration=True, compresslevel=6) as (out, written):
        while written() < target_bytes:
            chunk = []
            for _ in range(2000):
                count += 1
                if count % 40 == 1:
                    chunk.append(
                        '<w:p><w:pPr><w:pStyle w:val="Heading2"/></w:pPr><w:r>'
                        f"<w:t>Section {count}</w:t></w:r></w:p>"
                    )
                else:
                    words = " ".join(rng.choice(vocab) for _ in range(rng.randint(20, 60)))
                    chunk.append(
                        '<w:p><w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">'
                        f"{count}: </w:t></w:r><w:r><w:t>{escape(words)}</w:t></w:r></w:p>"
                    )
            out.write("".join(chunk).encode())
    return count


def large_docx(base: Path, runs: int = 5) -> dict[str, object]:
    import docx as python_docx  # the peer (the bench extra)

    path = base / "varied78.docx"
    count_file = base / "varied78.parts"
    if not path.exists() or not count_file.exists():
        count_file.write_text(str(varied_docx(path, 78 * 1024 * 1024)))
    parts = int(count_file.read_text())
    with tempfile.TemporaryDirectory() as home:
        ws = Workspace(home, [str(base)])
        wanted = f"{parts - 19}-{parts}"

        def ours() -> list[str]:
            return [p["text"] for p in ws.doc_read(str(path), part=wanted)["parts"]]

        def peer() -> list[str]:
            return [p.text for p in python_docx.Document(str(path)).paragraphs[-20:]]

        assert ours() == peer(), "ours and python-docx disagree on the last parts"
        report = Paired().run(ours, peer, runs).report()
        ours_peak = peak(ours)
        ws.close()
    return {
        "docx_bytes": path.stat().st_size,
        "parts": parts,
        "doc_read_last_20_vs_python_docx_s": report,
        "ours_peak_kib": round(ours_peak / 1024),
    }


def main() -> None:
    if "--large-docx" in sys.argv:
        base = Path(tempfile.gettempdir()) / "leanreplay-bench-docs"
        base.mkdir(exist_ok=True)
        print(json.dumps({"large_docx": large_docx(base)}, indent=2))
        return
    base = Path(tempfile.gettempdir()) / "leanreplay-bench-docs"
    base.mkdir(exist_ok=True)
    docx = base / "big.docx"
    if not docx.exists():
        para = "Revenue grew in every region this quarter, and the east office opened. " * 3
        blocks: list[officegen.Block] = []
        for i in range(900_000):
            blocks.append(("h2", f"Section {i}") if i % 50 == 0 else ("p", f"{i}: {para}"))
        docx.write_bytes(officegen.docx(blocks, title="Big report", author="Bench"))
    deck = base / "deck5000.pptx"
    if not deck.exists():
        deck.write_bytes(
            officegen.pptx([(f"Slide {i}", [f"body of slide {i}"]) for i in range(1, 5001)])
        )
    with zipfile.ZipFile(docx) as z:
        xml_bytes = z.getinfo("word/document.xml").file_size
    out: dict[str, object] = {"docx_bytes": docx.stat().st_size, "docx_xml_bytes": xml_bytes}
    with tempfile.TemporaryDirectory() as home:
        ws = Workspace(home, [str(base)])
        card, card_s = timed(lambda: card_for(docx), 3)
        out["docx_card"] = {
            "ms": round(card_s * 1000, 2),
            "peak_kib": round(peak(lambda: card_for(docx)) / 1024),
            "warnings": list(card.warnings),
        }
        _first, first_s = timed(lambda: ws.doc_read(str(docx), part="1-20"), 3)
        out["doc_read_first_20_parts_ms"] = round(first_s * 1000, 2)
        out["doc_read_first_20_peak_kib"] = round(
            peak(lambda: ws.doc_read(str(docx), part="1-20")) / 1024
        )
        _middle, middle_s = timed(lambda: ws.doc_read(str(docx), part="450000-450020"))
        out["doc_read_middle_parts_s"] = round(middle_s, 2)
        out["doc_read_middle_peak_kib"] = round(
            peak(lambda: ws.doc_read(str(docx), part="450000-450020")) / 1024
        )
        _, naive_s = timed(
            lambda: ElementTree.fromstring(zipfile.ZipFile(docx).read("word/document.xml"))
        )
        out["peer_zipfile_read_plus_elementtree_parse_s"] = round(naive_s, 2)
        out["peer_peak_kib"] = round(
            peak(lambda: ElementTree.fromstring(zipfile.ZipFile(docx).read("word/document.xml")))
            / 1024
        )
        search, search_s = timed(lambda: ws.doc_search(str(deck), '"slide 4321"'))
        _warm, warm_s = timed(lambda: ws.doc_search(str(deck), '"slide 4321"'), 5)
        deck_card, deck_card_s = timed(lambda: card_for(deck), 3)
        _tail, tail_s = timed(lambda: ws.doc_read(str(deck), part="4990-5000"))
        out["deck_5000"] = {
            "card_ms": round(deck_card_s * 1000, 2),
            "slides": deck_card.facts.get("slides"),
            "doc_read_last_slides_ms": round(tail_s * 1000, 1),
            "first_doc_search_s": round(search_s, 2),
            "warm_doc_search_ms": round(warm_s * 1000, 2),
            "hit": search["hits"][0]["part"],
        }
        ws.close()
    out["large_docx"] = large_docx(base)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
