"""The search room: the Tantivy plumbing (versioned, rebuildable derived indexes with one writer
across processes), the indexes built on it (PDF and document pages, stored messages), and
the capability index that finds tools by what they do (in memory, with its vocabulary).

May import: `index._errors`, `index._locks`, `index.tools`, `index.store`. Never `index.faces`.
"""
