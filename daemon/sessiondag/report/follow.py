"""What keeps the live viewer current: a daemon client (sessiondag_client, over the daemon's socket)
subscribed to the session. Every change it announces — a node appended or updated by any process,
a turn started or committed, a reload — tells the live document to catch up with disk (live.py);
a model call's streamed text (`agent/did_update` `text_delta`: node_id, delta) goes to it as is."""

from __future__ import annotations

from typing import Callable

from sessiondag_client import connect

QUIET_KINDS = {"reasoning_delta"}   # not shown while it streams: the node's update carries it


async def follow(state_dir: str, session_id: str, changed: Callable[[], None],
                 on_ready: Callable[[], None] | None = None,
                 text: Callable[[str, str], None] | None = None) -> str:
    """Subscribe and call `changed()` per change (`text(node_id, delta)` per streamed piece) until
    the daemon goes; the reason it stopped. Only `agent/did_update` has a `kind` (the turn's
    progress); a `session/did_change` carries its changes' kinds in `changes`, and any of them is
    news: the notifications are the client's typed ones (wire/protocol.py), narrowed on `method`."""
    c = await connect(state_dir=state_dir, auto_start=True, client_name="sessiondag view")
    try:
        await c.subscribe(session_id)
        changed()               # what happened between the first build and the subscription
        if on_ready is not None:
            on_ready()
        async for msg in c.notifications():
            if msg["method"] == "agent/did_update":
                p = msg["params"]
                if p["session_id"] != session_id:
                    continue
                kind = p["kind"]
                if kind == "text_delta":
                    node_id, delta = p.get("node_id"), p.get("delta")
                    if text is not None and isinstance(node_id, str) and isinstance(delta, str):
                        text(node_id, delta)
                elif kind not in QUIET_KINDS:
                    changed()
            elif msg["method"] == "session/did_delete":
                if msg["params"]["session_id"] == session_id:
                    return "the session was deleted"
            elif msg["method"] != "daemon/will_stop":  # did_change, did_rebind, did_unbind: catch up
                if msg["params"]["session_id"] == session_id:
                    changed()
        return "the daemon closed the connection"
    finally:
        await c.aclose()
