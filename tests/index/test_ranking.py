"""Search hits in one order whatever the segments: by score, then by row. The oracle reads
every match with its score and sorts; the index is built with one or two threads, in one
commit or several, and the fetch depths are made small to force each path."""

from __future__ import annotations

from pathlib import Path

import pytest
import tantivy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanreplay.index.search import _ranking
from leanreplay.index.search._ranking import top_hits

WORDS = ["budget", "sheet", "open", "report", "quota"]


def _index(path: Path, texts: list[str], threads: int, commits: int) -> tantivy.Index:
    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("row", indexed=True, fast=True)
    sb.add_text_field("text")
    index = tantivy.Index(sb.build(), path=str(path))
    writer = index.writer(15_000_000 * threads, threads)
    per = -(-len(texts) // commits)
    for row, text in enumerate(texts, start=1):
        doc = tantivy.Document(text=text)
        doc.add_unsigned("row", row)
        writer.add_document(doc)
        if row % per == 0:
            writer.commit()
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index


def _oracle(index: tantivy.Index, query: tantivy.Query, limit: int) -> list[tuple[float, int]]:
    searcher = index.searcher()
    hits = searcher.search(query, limit=max(1, searcher.num_docs), count=False).hits
    rows = searcher.fast_field_values("row", [a for _, a in hits])
    pairs = sorted(
        ((float(s), int(r)) for (s, _), r in zip(hits, rows, strict=True)),
        key=lambda p: (-p[0], p[1]),
    )
    return pairs[:limit]


texts = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join), min_size=1, max_size=120
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts,
    st.sampled_from(WORDS),
    st.integers(1, 12),
    st.sampled_from([1, 2]),
    st.integers(1, 4),
    st.sampled_from([2, 16, 2048]),
)
def test_the_top_hits_rank_by_score_then_row_whatever_the_segments(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    texts: list[str],
    word: str,
    limit: int,
    threads: int,
    commits: int,
    deepest: int,
) -> None:
    monkeypatch.setattr(_ranking, "FIRST_FETCH", 1)  # the small index's ties straddle the cut
    monkeypatch.setattr(_ranking, "DEEPEST", deepest)
    index = _index(tmp_path_factory.mktemp("ix"), texts, threads, commits)
    query = index.parse_query(f"{word} sheet", ["text"])
    got = top_hits(index.searcher(), index.schema, query, limit, "row")
    assert got == _oracle(index, query, limit)


@pytest.mark.parametrize("deepest", [16, 8192], ids=["tie-search", "deepened"])
def test_thousands_of_equal_scores_give_the_lowest_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deepest: int
) -> None:
    monkeypatch.setattr(_ranking, "DEEPEST", deepest)
    texts = ["other words"] * 50 + ["budget sheet"] * 10 + ["budget"] * 5000
    index = _index(tmp_path, texts, 2, 3)
    query = index.parse_query("budget", ["text"])
    got = top_hits(index.searcher(), index.schema, query, 10, "row")
    assert [row for _, row in got] == list(range(61, 71))
    assert got == _oracle(index, query, 10)
