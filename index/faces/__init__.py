"""The faces room: the `leanreplay` command line, the MCP server and
the web view (`leanreplay view`), thin shells over the
`Workspace` facade. Nothing in the library imports this room.

May import: everything in `index`.
"""
