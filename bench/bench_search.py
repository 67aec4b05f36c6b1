"""Tantivy (our page index schema) against SQLite FTS5 on the same 100,000 generated pages.

The corpus draws words from a Zipf-distributed vocabulary of 30,000 made-up words, so terms
range from very common to rare, as in real text. For each query kind (term, AND, OR,
phrase) 200 queries are drawn the same way for both engines; each engine returns the top 10
by BM25. Reported: p50 and p99 latency without and with snippets, and the FTS5/Tantivy ratio.

    python bench/bench_search.py [--pages 100000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tantivy

from leanreplay.index.search._pdfindex import _schema

WORDS_PER_PAGE = 120


def vocabulary(size: int, rng: random.Random) -> list[str]:
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < size:
        n = rng.randrange(2, 5)
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(n)))
    return sorted(words)


def pages(count: int, vocab: list[str], rng: random.Random) -> list[str]:
    weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(vocab))))
    return [
        " ".join(rng.choices(vocab, cum_weights=weights, k=WORDS_PER_PAGE)) for _ in range(count)
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def measure(run: Callable[[str], object], queries: list[str]) -> dict[str, float]:
    for q in queries[:10]:
        run(q)
    times = []
    for q in queries:
        started = time.perf_counter()
        run(q)
        times.append(time.perf_counter() - started)
    return {"p50_ms": round(percentile(times, 0.5), 4), "p99_ms": round(percentile(times, 0.99), 4)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=100_000)
    args = parser.parse_args()
    rng = random.Random(11)
    vocab = vocabulary(30_000, rng)
    corpus = pages(args.pages, vocab, rng)
    report: dict[str, Any] = {
        "pages": args.pages,
        "words_per_page": WORDS_PER_PAGE,
        "load_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="bench_search_") as tmp:
        # Tantivy, with the schema pdf_search uses.
        schema = _schema()
        index = tantivy.Index(
            schema, path=str(Path(tmp, "tantivy").mkdir() or Path(tmp, "tantivy"))
        )
        started = time.perf_counter()
        writer = index.writer(heap_size=256_000_000, num_threads=2)
        for number, text in enumerate(corpus, start=1):
            writer.add_document(
                tantivy.Document.from_dict(
                    {
                        "kind": "page",
                        "file_id": "f",
                        "path": "/x.pdf",
                        "page": number,
                        "text": text,
                    },
                    schema,
                )
            )
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        report["tantivy_index_s"] = round(time.perf_counter() - started, 2)

        db = sqlite3.connect(str(Path(tmp, "fts.sqlite3")))
        started = time.perf_counter()
        db.execute("CREATE VIRTUAL TABLE pages USING fts5(text)")
        with db:
            db.executemany(
                "INSERT INTO pages(rowid, text) VALUES (?, ?)", enumerate(corpus, start=1)
            )
        report["fts5_index_s"] = round(time.perf_counter() - started, 2)

        common = vocab[:200]
        middle = vocab[200:3000]
        kinds: dict[str, list[tuple[str, str]]] = {}  # kind -> (tantivy query, fts5 query)
        kinds["term"] = [(w, w) for w in rng.choices(middle, k=200)]
        pairs = [(rng.choice(common), rng.choice(middle)) for _ in range(200)]
        kinds["and"] = [(f"+{a} +{b}", f"{a} AND {b}") for a, b in pairs]
        kinds["or"] = [(f"{a} {b}", f"{a} OR {b}") for a, b in pairs]
        phrases = []
        for _ in range(200):
            words = rng.choice(corpus).split()
            at = rng.randrange(len(words) - 1)
            phrases.append(f'"{words[at]} {words[at + 1]}"')
        kinds["phrase"] = [(p, p) for p in phrases]

        searcher = index.searcher()

        def tantivy_top10(q: str, snippets: bool = False) -> list[Any]:
            query = index.parse_query(q, ["text"])
            hits = searcher.search(query, limit=10, count=False).hits
            if snippets:
                gen = tantivy.SnippetGenerator.create(searcher, query, schema, "text")
                return [gen.snippet_from_doc(searcher.doc(addr)).to_html() for _, addr in hits]
            return [searcher.doc(addr)["page"][0] for _, addr in hits]

        def fts5_top10(q: str, snippets: bool = False) -> list[Any]:
            if snippets:
                sql = (
                    "SELECT snippet(pages, 0, '<b>', '</b>', '...', 24) FROM pages "
                    "WHERE pages MATCH ? ORDER BY rank LIMIT 10"
                )
            else:
                sql = "SELECT rowid FROM pages WHERE pages MATCH ? ORDER BY rank LIMIT 10"
            return db.execute(sql, (q,)).fetchall()

        results: dict[str, Any] = {}
        for kind, queries in kinds.items():
            t_q = [t for t, _ in queries]
            f_q = [f for _, f in queries]
            row = {
                "tantivy": measure(tantivy_top10, t_q),
                "fts5": measure(fts5_top10, f_q),
                "tantivy_snippets": measure(lambda q: tantivy_top10(q, True), t_q),
                "fts5_snippets": measure(lambda q: fts5_top10(q, True), f_q),
            }
            row["ratio_fts5_over_tantivy"] = round(
                row["fts5"]["p50_ms"] / row["tantivy"]["p50_ms"], 2
            )
            row["ratio_with_snippets"] = round(
                row["fts5_snippets"]["p50_ms"] / row["tantivy_snippets"]["p50_ms"], 2
            )
            results[kind] = row
        report["queries"] = results
        report["floors"] = {
            "tantivy_3x_faster_than_fts5": all(
                r["ratio_fts5_over_tantivy"] >= 3 for r in results.values()
            )
        }
        db.close()
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
