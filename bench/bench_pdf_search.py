"""First and warm pdf_search on a 3,000-page text PDF, against pdftotext on the same file.

First search = page-count probe + text extraction on every core + Tantivy indexing + the
query, end to end through `Workspace.pdf_search`, in a fresh home, 5 runs. Peer: `pdftotext`
(poppler) writing the whole text, interleaved with ours; medians of wall and CPU seconds
(worker processes included) and of the per-pair ratios (floor: <= 1.0x its CPU). Warm: 200
queries with snippets on the indexed file, p50 and p99. Prints JSON.

    python bench/bench_pdf_search.py
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._paired import Paired, percentiles
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
        workspaces: list[Workspace] = []

        def fresh_home(run: int) -> None:  # opening the store is not part of the search
            workspaces.append(Workspace(Path(tmp) / f"home{run}", [tmp]))

        def ours() -> None:
            result = workspaces[-1].pdf_search(str(pdf), "marker02500 revenue")
            assert result["indexed_now"]
            assert result["hits"][0]["page"] == 2500, result["hits"][:1]

        def pdftotext() -> None:
            subprocess.run(["pdftotext", str(pdf), str(Path(tmp) / "out.txt")], check=True)

        first = Paired().run(ours, pdftotext, 5, setup=fresh_home).report()
        for ws in workspaces:
            ws.close()
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
        report = {
            "pages": PAGES,
            "bytes": pdf.stat().st_size,
            "cpu_count": os.cpu_count(),
            "backend": BACKEND,
            # CPU seconds count our worker processes and pdftotext alike (reaped children).
            "first_search_vs_pdftotext": first,
            "warm_ms": percentiles(warm),
        }
        report["floors"] = {
            "first_cpu_within_1.0x_pdftotext": first["ratio_cpu"] <= 1.0,
            "first_wall_within_1.5x_pdftotext": first["ratio_wall"] <= 1.5,
            "warm_p50_under_5ms": report["warm_ms"]["p50"] < 5,
        }
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
