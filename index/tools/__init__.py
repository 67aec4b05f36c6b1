"""The tools room: confined file access (paths, O_NOFOLLOW walks, fingerprints, folder
listings) and the readers behind the file tools: the sparse line index, UTF-16 transcoding,
images, PDF text and its worker processes, documents, tables and archives.

May import: `index._errors`, `index._locks`, `index._limits`, `cards`. Never `index.store`,
`index.search` or `index.faces`.
"""
