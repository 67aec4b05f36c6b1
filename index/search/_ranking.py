"""Top hits in one order whatever the index's segments: by score, then by a fast field.

Tantivy breaks score ties by document address, which depends on the segments: how many
threads indexed, which merges ran, and the segments' random ids. The same store indexed
twice could answer with other messages among equal scores. Here the order is (score
descending, ``field`` ascending) over every matching document, exactly:

- the top `FIRST_FETCH` (at least ``limit + 1``) by score are fetched: a search costs what
  its matches cost to score, hardly what it returns, so a first fetch this deep rarely
  needs a second one. When the last one scores below the ``limit``-th, every document
  scoring as much as the ``limit``-th is among them;
- else the fetch grows (a group of equal scores straddles the cut) up to `DEEPEST`;
- past that (thousands of equal scores), the tied documents are found in ``field`` order:
  the matches are read by ``field`` a page at a time, and each page is scored in one
  query beside a document known to tie, keeping those that score exactly as it does.
"""

from __future__ import annotations

from typing import Any

import tantivy

__all__ = ["DEEPEST", "FIRST_FETCH", "top_hits"]

FIRST_FETCH = 512
DEEPEST = 4096  # hits fetched by score before the tied ones are found by field order
_GROWTH = 8
_FIRST_PAGE = 256
_MAX_U64 = 2**64 - 1


def top_hits(
    searcher: Any, schema: Any, query: Any, limit: int, field: str
) -> list[tuple[float, int]]:
    """(score, ``field`` value) of the top ``limit`` matches of ``query``, by score
    descending, then by the value ascending (a u64 fast field, distinct per document)."""
    want = max(limit + 1, FIRST_FETCH)
    while True:
        hits = searcher.search(query, limit=want, count=False).hits
        if len(hits) <= limit or hits[-1][0] < hits[limit - 1][0]:
            return _sorted(searcher, field, hits)[:limit]
        if want >= DEEPEST:
            return _with_ties(searcher, schema, query, limit, field, hits)
        want *= _GROWTH


def _sorted(searcher: Any, field: str, hits: list[tuple[float, Any]]) -> list[tuple[float, int]]:
    values = searcher.fast_field_values(field, [address for _, address in hits])
    pairs = [(float(score), int(value)) for (score, _), value in zip(hits, values, strict=True)]
    pairs.sort(key=lambda pair: (-pair[0], pair[1]))
    return pairs


def _with_ties(
    searcher: Any, schema: Any, query: Any, limit: int, field: str, hits: list[tuple[float, Any]]
) -> list[tuple[float, int]]:
    """The top ``limit`` when more documents tie at the cut than were fetched: those above
    the cut's score (all fetched), then the tied ones with the lowest values."""
    cut = float(hits[limit - 1][0])
    above = [pair for pair in _sorted(searcher, field, hits) if pair[0] > cut]
    need = limit - len(above)
    (reference,) = searcher.fast_field_values(field, [hits[limit - 1][1]])
    found: list[int] = []
    after = -1
    page = max(_FIRST_PAGE, 4 * need)
    must = tantivy.Occur.Must
    while len(found) < need and after < _MAX_U64:
        later = tantivy.Query.range_query(
            schema, field, tantivy.FieldType.Unsigned, after + 1, _MAX_U64
        )
        window = tantivy.Query.boolean_query([(must, query), (must, later)])
        candidates = searcher.search(
            window, limit=page, count=False, order_by_field=field, order=tantivy.Order.Asc
        ).hits
        if not candidates:
            break
        values = [int(value) for value, _ in candidates]
        # The page and the reference scored by one query (its extra clause adds 0.0), so a
        # tie is an exact equality of two scores computed the same way.
        scope = tantivy.Query.boost_query(
            tantivy.Query.term_set_query(schema, field, [*values, reference]), 0.0
        )
        scored = searcher.search(
            tantivy.Query.boolean_query([(must, query), (must, scope)]),
            limit=len(values) + 1,
            count=False,
        ).hits
        keys = searcher.fast_field_values(field, [address for _, address in scored])
        score_of = {int(key): float(score) for (score, _), key in zip(scored, keys, strict=True)}
        tie = score_of[int(reference)]
        found += [value for value in values if score_of.get(value) == tie]
        after = values[-1]
        page *= 2
    return above + [(cut, value) for value in found[:need]]
