"""What keeps the live viewer current: a daemon client (sessiondag_client, over the daemon's socket)
subscribed to the session. Every change it announces — a node appended or updated by any process,
a turn started or committed, a reload — tells the live document to catch up with disk (live.py);
a model call's streamed text (`agent/did_update` `text_delta`: node_id, delta) goes to it as is."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from sessiondag_client import connect

WATCHED = {"session/did_change", "agent/did_update", "session/did_rebind", "session/did_unbind", "session/did_delete"}
QUIET_KINDS = {"reasoning_delta"}   # not shown while it streams: the node's update carries it


async def follow(state_dir: str, session_id: str, changed: Callable[[], None],
                 on_ready: Callable[[], None] | None = None,
                 text: Callable[[str, str], None] | None = None) -> str:
    """Subscribe and call `changed()` per change (`text(node_id, delta)` per streamed piece) until
    the daemon goes; the reason it stopped."""
    c = await connect(state_dir=state_dir, auto_start=True, client_name="sessiondag view")
    try:
        await c.subscribe(session_id)
        changed()               # what happened between the first build and the subscription
        if on_ready is not None:
            on_ready()
        async for msg in c.notifications():
            p: Mapping[str, Any] = msg.get("params") or {}
            if p.get("session_id") != session_id or msg.get("method") not in WATCHED:
                continue
            if msg["method"] == "session/did_delete":
                return "the session was deleted"
            kind = p.get("kind")
            if kind == "text_delta":
                if text is not None and isinstance(p.get("node_id"), str) and isinstance(p.get("delta"), str):
                    text(p["node_id"], p["delta"])
            elif kind not in QUIET_KINDS:
                changed()
        return "the daemon closed the connection"
    finally:
        await c.aclose()
