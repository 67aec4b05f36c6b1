"""The search room: the Tantivy plumbing (versioned, rebuildable derived indexes with one writer
across processes) and the two indexes built on it: PDF pages and stored messages.

May import: `index._errors`, `index._locks`, `index.tools`, `index.store`. Never `index.faces`.
"""
