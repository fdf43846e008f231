"""The wire layer of the sessiondag protocol, shared by the daemon and every Python client.

- `codec`: LSP framing (Content-Length headers, orjson bodies) — the one frame parser, its caps and
  `FrameError`, for asyncio streams (the daemon), anyio streams (the client) and byte chunks.
- `errors`: the JSON-RPC error codes, the typed error kinds (`data.kind`) with their stable codes and
  the one (de)serializer between error objects and exceptions.
- `types`: the result types of the client (`Call`, `Branch`, `SessionHandle`, `Usage`, `BranchPage`).

It depends on orjson and anyio only; the daemon package depends on it, never the other way round.
"""
