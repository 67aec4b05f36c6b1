"""First and warm pdf_search on a 3,000-page text PDF, against pdftotext on the same file.

First search = page-count probe + text extraction on every core + Tantivy indexing + the
query, end to end through `Workspace.pdf_search`, in a fresh home, 5 runs. Peer: `pdftotext`
(poppler) writing the whole text, run right before each of ours; medians and the median of
the per-pair ratios. Warm: 200 queries with snippets on the indexed file, p50 and p99.
Prints JSON.

    python bench/bench_pdf_search.py
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from leanreplay.index import Workspace
from leanreplay.index.tools._pdftext import BACKEND
from tests import pdfgen

PAGES = 3000


def main() -> None:
    if not shutil.which("pdftotext"):
        print("pdftotext not found: apt-get install poppler-utils", file=sys.stderr)
        sys.exit(2)
    with tempfile.TemporaryDirectory(prefix="bench_pdf_") as tmp:
        pdf = Path(tmp) / "text_3000.pdf"
        pdfgen.write_pdf(str(pdf), PAGES, compress=True)
        first, peer = [], []
        for run in range(5):
            started = time.perf_counter()
            subprocess.run(["pdftotext", str(pdf), str(Path(tmp) / "out.txt")], check=True)
            peer.append(time.perf_counter() - started)
            home = Path(tmp) / f"home{run}"
            with Workspace(home, [tmp]) as ws:
                started = time.perf_counter()
                result = ws.pdf_search(str(pdf), "marker02500 revenue")
                first.append(time.perf_counter() - started)
                assert result["indexed_now"]
                assert result["hits"][0]["page"] == 2500, result["hits"][:1]
        with Workspace(Path(tmp) / "home0", [tmp]) as ws:
            rng = random.Random(7)
            words = pdfgen.WORDS
            queries = [
                rng.choice(
                    [
                        f"marker{rng.randrange(1, PAGES):05d}",
                        f"{rng.choice(words)} {rng.choice(words)}",
                        f'"{rng.choice(words)} {rng.choice(words)}"',
                    ]
                )
                for _ in range(200)
            ]
            warm = []
            for q in queries:
                started = time.perf_counter()
                result = ws.pdf_search(str(pdf), q)
                warm.append(time.perf_counter() - started)
                assert not result["indexed_now"]
        warm.sort()
        report = {
            "pages": PAGES,
            "bytes": pdf.stat().st_size,
            "cpu_count": os.cpu_count(),
            "backend": BACKEND,
            "first_search_s": round(statistics.median(first), 3),
            "first_search_runs_s": [round(t, 3) for t in first],
            "pdftotext_s": round(statistics.median(peer), 3),
            "ratio_first_over_pdftotext": round(
                statistics.median(first) / statistics.median(peer), 3
            ),
            # Each run times pdftotext right before ours: the per-pair ratio cancels drift in
            # the machine's load between runs.
            "ratio_median_of_pairs": round(
                statistics.median(f / p for f, p in zip(first, peer, strict=True)), 3
            ),
            "warm_p50_ms": round(warm[len(warm) // 2] * 1000, 3),
            "warm_p99_ms": round(warm[int(len(warm) * 0.99)] * 1000, 3),
        }
        report["floors"] = {
            "first_within_1.5x_pdftotext": report["ratio_median_of_pairs"] <= 1.5,
            "warm_p50_under_5ms": report["warm_p50_ms"] < 5,
        }
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
