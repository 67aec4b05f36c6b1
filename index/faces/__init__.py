"""The faces room: the `leanreplay` command line and the MCP server, thin shells over the
`Workspace` facade. Nothing in the library imports this room.

May import: everything in `index`.
"""
