"""conversation_search on a PostgreSQL store: PostgreSQL's own full-text search.

Each message's tsvector is stored with it at append (``messages.search``, a GIN index; see
`store._tsearch` for what it holds), so a message appended by any worker is searchable by every
other as soon as its transaction commits: there is nothing to catch up. A query is the model's
free text through ``websearch_to_tsquery`` (which never raises on syntax), ranked by
``ts_rank`` and shown with a ``ts_headline`` snippet that marks matches as **word**, the answer
shape of the Tantivy search.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from .._errors import InvalidArgumentError
from ..store._text import message_text, search_hit
from ..store._tsearch import SEARCH_CONFIG, websearch_text

__all__ = ["PgMessageSearch"]

SNIPPET_WORDS = 40  # ts_headline's MaxWords: about the 240 chars of a Tantivy snippet
SNIPPET_CHARS = 240


class _Queryable(Protocol):
    def query(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]: ...


# Ranked among the first CANDIDATES matches: a word in most of a million messages would
# otherwise have ts_rank computed for every one of them (seconds) for a page of ten.
CANDIDATES = 2_000
# The query is written out where it is used (not a CTE): a constant the planner can match
# against the GIN index.
_Q = f"websearch_to_tsquery('{SEARCH_CONFIG}', %(query)s)"
_SEARCH = f"""
WITH candidates AS (
    SELECT m.n, m.search FROM messages m WHERE m.search @@ {_Q} {{scope}} LIMIT %(candidates)s
),
top AS (
    SELECT c.n, ts_rank(c.search, {_Q}) AS score FROM candidates c
    ORDER BY score DESC, c.n LIMIT %(limit)s
)
SELECT m.conversation_id, m.id, m.seq, m.role, m.body, top.score,
       ts_headline('{SEARCH_CONFIG}', m.search_text, {_Q},
                   'StartSel=**, StopSel=**, MaxWords={SNIPPET_WORDS}, MinWords=15, '
                   'MaxFragments=1, FragmentDelimiter=" … "')
FROM top JOIN messages m ON m.n = top.n
ORDER BY top.score DESC, top.n
"""


class PgMessageSearch:
    """Search of the messages in a `PgStore`, the `MessageIndex` interface."""

    def __init__(self, store: Any) -> None:
        self.store: _Queryable = store

    def catch_up(self) -> int:
        """Nothing to add: every row is indexed in the transaction that stores it."""
        return 0

    def search(
        self, query_text: str, *, conversations: list[str] | None, limit: int
    ) -> list[dict[str, Any]]:
        text = websearch_text(query_text)
        args: dict[str, Any] = {"query": text, "limit": limit, "candidates": CANDIDATES}
        scope = ""
        if conversations is not None:
            scope = "AND m.conversation_id = ANY(%(scope)s)"
            args["scope"] = conversations
        rows = self.store.query(_SEARCH.format(scope=scope), args)
        if not rows:
            (empty,) = self.store.query(
                f"SELECT numnode(websearch_to_tsquery('{SEARCH_CONFIG}', %s)) = 0", (text,)
            )[0]
            if empty:
                raise InvalidArgumentError(
                    f"query {query_text!r} has no searchable words; use plain words"
                )
        hits = []
        for cid, mid, seq, role, body, score, snippet in rows:
            _, tools = message_text(json.loads(body))
            text = " ".join(str(snippet).split())[:SNIPPET_CHARS]
            hits.append(search_hit(cid, mid, seq, role, tools, score, text))
        return hits
