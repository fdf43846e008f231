"""The JSON-RPC edge: codec, method table, per-connection server, transports."""
