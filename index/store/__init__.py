"""The store room: conversations in SQLite, or in PostgreSQL for a fleet (`_postgres`, behind
the one `_protocol`; append-only, byte-exact originals), with their named
schema migrations (`_migrations`: a new step per change, recorded in the store), the importers
that turn agent logs into stored messages, inline attachments saved by content hash, and the
paged reads of the originals.

May import: `index._errors`, `index._locks`, `cards`, `placeholders`. Never `index.tools`,
`index.search` or `index.faces`.
"""
