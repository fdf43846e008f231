"""The pure core: data model, errors, ids and the in-memory graph. No I/O, no JSON-RPC."""
