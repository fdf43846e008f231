"""What keeps the live viewer current: a daemon client (sessiondag_client, over the daemon's socket)
subscribed to the session; every change it announces — a node appended or updated by any process,
a turn started or committed, a reload — marks the live document dirty (bridge.py rebuilds it)."""

from __future__ import annotations

from typing import Any, Callable

from sessiondag_client import connect

WATCHED = {"session/did_change", "agent/did_update", "session/did_rebind", "session/did_unbind", "session/did_delete"}
QUIET_KINDS = {"text_delta"}        # streamed text: the node's update follows when the call ends


async def follow(state_dir: str, session_id: str, changed: Callable[[], None],
                 on_ready: Callable[[], None] | None = None) -> str:
    """Subscribe and call `changed()` per change until the daemon goes; the reason it stopped."""
    c = await connect(state_dir=state_dir, auto_start=True, client_name="sessiondag view")
    try:
        await c.subscribe(session_id)
        changed()               # what happened between the first build and the subscription
        if on_ready is not None:
            on_ready()
        async for msg in c.notifications():
            p: dict[str, Any] = msg.get("params") or {}
            if p.get("session_id") != session_id or msg.get("method") not in WATCHED:
                continue
            if msg["method"] == "session/did_delete":
                return "the session was deleted"
            if p.get("kind") not in QUIET_KINDS:
                changed()
        return "the daemon closed the connection"
    finally:
        await c.aclose()
