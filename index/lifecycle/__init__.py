"""The lifecycle room: what happens to a stored conversation over its life. Appends and the
rolling prefix fold (one summary per conversation, under a lock shared by every process),
lean replays of folded conversations that read only what they show, prompt snapshots, model
calls with the in-turn compactor and its event log, and the replay size turn by turn.

May import: `index._errors`, `index._locks`, `index.store`, `placeholders`. Never
`index.tools`, `index.search` or `index.faces`.
"""
