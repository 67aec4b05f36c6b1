"""PDF page-count probe against its peers, in-process, same files, same run.

Generates a 3,000-page text PDF (~5 MB) and a 3,000-page PDF padded past 200 MB, plus
object-stream and linearized variants (qpdf, when installed). For each file: median time of
our probe (`cards.pdf_facts`), the whole card (`cards.card_for`), pypdf `len(reader.pages)`,
pypdf's trailer `/Root/Pages/Count`, pypdfium2 `len(PdfDocument)`, and `pdfinfo` as a process;
our probe and pypdfium2 also run interleaved, 300 pairs, for the medians of the paired ratios
(wall and CPU), in three variants that take turns 25 pairs at a time, each turn opened by an
untimed pair that washes out the variant before (bench/_paired.py): ``raw``, the
calls back to back; ``malloc_trim``, glibc's ``malloc_trim(0)`` before each timed call; and
``settle``, one 32 KiB malloc before each timed call, which makes glibc do then the
consolidation and sorting it defers from the frees of the call before (without it each side's
first large malloc pays for the other's frees). The resets run outside the timed region; each
variant reports its minor page faults, and without glibc the resets are skipped and say so.
Issue 20's 4x floor is judged on ``settle`` (``JUDGED_ON``; the JSON says why), the raw pairs
printed beside it.
Peak Python memory of our probe comes from tracemalloc. Prints JSON with the ratios.

    python bench/bench_cards.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pypdf

from bench._paired import allocator_resets, interleave, load
from leanreplay import cards
from tests import pdfgen

PAGES = 3000
# The variant issue 20's 4x floor is judged on, and why.
JUDGED_ON = "settle"
WHY = (
    "PDFium frees thousands of small chunks per document; glibc defers their consolidation and "
    "sorting to the next large malloc, which in raw pairs is the probe's (and our frees land on "
    "PDFium the same way). settle's 32 KiB malloc makes that deferred work happen before each "
    "timed call and returns nothing to the kernel, so each side pays only for its own work "
    "(caches PDFium evicted stay evicted: that cost is the probe's). malloc_trim(0) "
    "does the same work but also madvises every free page away, so both sides then refault "
    "what they touch (see the faults_mean figures): a cost that neither pays in a long-lived "
    "process. Raw pairs are printed as well, and show what a caller alternating the two pays."
)


def median_ms(fn: Callable[[], object], repeats: int, budget_s: float = 8.0) -> float:
    fn()  # warm the page cache and imports
    times = []
    deadline = time.perf_counter() + budget_s
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
        if time.perf_counter() > deadline and len(times) >= 3:
            break
    return statistics.median(times) * 1000


def peak_kib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1024


def make_files(folder: Path, quick: bool) -> dict[str, Path]:
    files = {"text_3000": folder / "text_3000.pdf", "padded_3000": folder / "padded_3000.pdf"}
    pdfgen.write_pdf(str(files["text_3000"]), PAGES)
    # ~70 KB of padding per page: past 200 MB in all, page objects unchanged.
    pdfgen.write_pdf(str(files["padded_3000"]), PAGES, pad=20_000 if quick else 70_000)
    files["objstm_3000"] = folder / "objstm_3000.pdf"
    pdfgen.write_pdf(str(files["objstm_3000"]), PAGES, xref="stream", objstm=True)
    if shutil.which("qpdf"):
        for name, args in {
            "qpdf_objstm_3000": ["--object-streams=generate"],
            "qpdf_linearized_3000": ["--linearize"],
        }.items():
            files[name] = folder / f"{name}.pdf"
            subprocess.run(["qpdf", *args, str(files["text_3000"]), str(files[name])], check=True)
    return files


def bench_file(path: Path, quick: bool) -> dict[str, Any]:
    import pypdfium2

    def ours() -> int | None:
        return cards.pdf_facts(path).pages

    def card() -> object:
        return cards.card_for(path)

    def pypdf_len() -> int:
        with path.open("rb") as f:
            return len(pypdf.PdfReader(f).pages)

    def pypdf_trailer() -> int:
        with path.open("rb") as f:
            reader = pypdf.PdfReader(f)
            return int(reader.trailer["/Root"]["/Pages"]["/Count"])  # type: ignore[index]

    def pdfium() -> int:
        doc = pypdfium2.PdfDocument(str(path))
        try:
            return len(doc)
        finally:
            doc.close()

    assert ours() == PAGES, f"probe gave {ours()} pages for {path.name}"
    assert pdfium() == PAGES
    row: dict[str, Any] = {"bytes": path.stat().st_size}
    # The floor's pairs: our probe and PDFium's, interleaved call by call, raw and with the
    # heap settled before each call; the three variants take turns 25 pairs at a time.
    ours()
    pdfium()
    resets = allocator_resets()
    variants = interleave(ours, pdfium, 300, {"raw": None, **resets})
    reports = {name: paired.report(unit=1e-3) for name, paired in variants.items()}
    row["probe_vs_pypdfium2_ms"] = reports["raw"]
    row["probe_vs_pypdfium2_ms_reset"] = {k: v for k, v in reports.items() if k != "raw"}
    row["pypdfium2_over_ours"] = {
        name: {
            "wall": round(1 / r["ratio_wall"], 2),
            "cpu": round(1 / r["ratio_cpu"], 2) if r["ratio_cpu"] else None,
        }
        for name, r in reports.items()
    }
    row["ours_probe_ms"] = median_ms(ours, 300)
    row["ours_card_ms"] = median_ms(card, 100)
    row["pypdfium2_ms"] = median_ms(pdfium, 100)
    row["pypdf_trailer_count_ms"] = median_ms(pypdf_trailer, 3 if quick else 7)
    row["pypdf_len_pages_ms"] = median_ms(pypdf_len, 3 if quick else 5)
    if shutil.which("pdfinfo"):
        row["pdfinfo_process_ms"] = median_ms(
            lambda: subprocess.run(["pdfinfo", str(path)], capture_output=True, check=True), 20
        )
    row["ours_probe_peak_kib"] = round(peak_kib(ours), 1)
    paired = row["probe_vs_pypdfium2_ms"]
    row["ratio_pypdfium2_over_ours"] = 1 / paired["ratio_wall"]
    row["ratio_pypdfium2_over_ours_cpu"] = 1 / paired["ratio_cpu"]
    row["ratio_pypdf_len_over_ours"] = row["pypdf_len_pages_ms"] / row["ours_probe_ms"]
    row["ratio_pypdf_trailer_over_ours"] = row["pypdf_trailer_count_ms"] / row["ours_probe_ms"]
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}


def four_times(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Issue 20's floor, judged on `JUDGED_ON` (raw where no reset could run here)."""
    skipped = next(
        (
            r["probe_vs_pypdfium2_ms_reset"][JUDGED_ON]["reset"].get("skipped")
            for r in results.values()
        ),
        None,
    )
    judged = "raw" if skipped else JUDGED_ON
    return {
        "judged_on": judged,
        "why": WHY if not skipped else f"{JUDGED_ON} {skipped}; judged on the raw pairs",
        "holds": all(r["pypdfium2_over_ours"][judged]["wall"] >= 4 for r in results.values()),
        "files": {n: r["pypdfium2_over_ours"][judged]["wall"] >= 4 for n, r in results.items()},
        "raw_files": {n: r["pypdfium2_over_ours"]["raw"]["wall"] >= 4 for n, r in results.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller padded file, fewer repeats")
    args = parser.parse_args()
    load_before = load()
    with tempfile.TemporaryDirectory(prefix="bench_cards_") as tmp:
        files = make_files(Path(tmp), args.quick)
        results = {name: bench_file(path, args.quick) for name, path in files.items()}
        # Size independence, measured interleaved so that machine noise hits both files alike.
        text_times: list[float] = []
        padded_times: list[float] = []
        for _ in range(1000):
            for path, times in (
                (files["text_3000"], text_times),
                (files["padded_3000"], padded_times),
            ):
                started = time.perf_counter()
                cards.pdf_facts(path)
                times.append(time.perf_counter() - started)
        interleaved = statistics.median(padded_times) / statistics.median(text_times)
    small, big = results["text_3000"], results["padded_3000"]
    floors = {
        "probe_2x_faster_than_pypdfium2": all(
            results[n]["ratio_pypdfium2_over_ours"] >= 2 for n in ("text_3000", "padded_3000")
        ),
        # Issue 20's floor: 4x on every variant (cross-reference streams, object streams,
        # linearized files), from the median of the interleaved pairs' wall ratios.
        "probe_4x_faster_than_pypdfium2_every_file": four_times(results),
        "probe_50x_faster_than_pypdf_len": all(
            results[n]["ratio_pypdf_len_over_ours"] >= 50 for n in ("text_3000", "padded_3000")
        ),
        "padded_over_text_probe_time": round(big["ours_probe_ms"] / small["ours_probe_ms"], 3),
        "padded_over_text_probe_time_interleaved": round(interleaved, 3),
        "probe_peak_under_20_mib": all(
            r["ours_probe_peak_kib"] < 20 * 1024 for r in results.values()
        ),
    }
    print(
        json.dumps(
            {
                "pages": PAGES,
                "cpu_count": os.cpu_count(),
                "load_before": load_before,
                "load_after": load(),
                "files": results,
                "floors": floors,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
