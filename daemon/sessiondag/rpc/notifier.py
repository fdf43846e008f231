"""Notifications to the clients subscribed to a session.

The daemon hooks `Notifier.listener` on every session it loads (store/events.py). The store calls it
in whatever thread made or noticed the change, holding the session lock; the events are queued and
handed to the event loop by one wake-up per burst, not one per write. On the loop each batch becomes
one `session/did_change` {session_id, head_id, changes} (append, update, checkout, name, meta,
reload: the graph was rebuilt from disk, e.g. another process rotated the journal past what this
one could follow, noticed by a write or by the session-dir watcher, disk_events.py), and the nodes it appended are
passed on to `on_appended(sid, nodes)` (workspace-change attribution).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Callable

from ..store.events import BranchNamed, HeadMoved, MetaChanged, NodeAppended, NodeUpdated, Reloaded

log = logging.getLogger("sessiondag.daemon")


def change_of(ev: Any) -> dict[str, Any] | None:
    """The `session/did_change` entry of one store event (None: not announced)."""
    if isinstance(ev, NodeAppended):
        return {"kind": "append", "node": ev.node}
    if isinstance(ev, NodeUpdated):
        return {"kind": "update", "node_id": ev.node_id, "fields": ev.fields}
    if isinstance(ev, HeadMoved):
        return {"kind": "checkout", "head_id": ev.head_id}
    if isinstance(ev, BranchNamed):
        return {"kind": "name", "head_id": ev.head_id, "name": ev.name}
    if isinstance(ev, MetaChanged):
        return {"kind": "meta", "key": ev.key}
    if isinstance(ev, Reloaded):  # rebuilt from disk, whichever path noticed it (a write, a catch-up)
        return {"kind": "reload"}
    return None


class Notifier:
    def __init__(self, loop: Callable[[], asyncio.AbstractEventLoop | None],
                 on_appended: Callable[[str, list[dict[str, Any]]], None]):
        self.loop, self.on_appended = loop, on_appended   # loop(): the daemon's event loop
        self.subscribers: dict[str, set[Any]] = {}    # session id -> subscribed connections
        self._inbox: list[tuple[str, str | None, list[Any]]] = []
        self._inbox_lock = threading.Lock()
        self._scheduled = False

    # --- subscriptions -----------------------------------------------------------------------
    def subscribe(self, conn: Any, sid: str) -> bool:
        """True if `sid` had no subscriber before (the watched set changes)."""
        subs = self.subscribers.setdefault(sid, set())
        first = not subs
        subs.add(conn)
        conn.subscriptions.add(sid)
        return first

    def unsubscribe(self, conn: Any, sid: str) -> tuple[bool, bool]:
        """(was subscribed, was the last subscriber of `sid`)."""
        conn.subscriptions.discard(sid)
        subs = self.subscribers.get(sid)
        if not subs or conn not in subs:
            return False, False
        subs.discard(conn)
        if subs:
            return True, False
        del self.subscribers[sid]
        return True, True

    def broadcast(self, sid: str, method: str, params: dict[str, Any]) -> None:
        conns = self.subscribers.get(sid)
        if not conns:
            return
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        for conn in list(conns):
            conn.send(msg)

    # --- store events ------------------------------------------------------------------------
    def listener(self, session: Any, events: list[Any]) -> None:
        """The store listener (any thread, under the session lock): queue, wake the loop once."""
        g = session.loaded_graph
        head = g.head_id if g is not None else None
        with self._inbox_lock:
            self._inbox.append((session.id, head, events))
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.loop().call_soon_threadsafe(self._drain)
        except RuntimeError:  # loop closed during shutdown
            pass

    def _drain(self) -> None:
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
            self._scheduled = False
        for sid, head, events in items:
            self._announce(sid, head, events)

    def _announce(self, sid: str, head: str | None, events: list[Any]) -> None:
        changes = [c for c in map(change_of, events) if c is not None]
        if changes:
            self.broadcast(sid, "session/did_change", {"session_id": sid, "head_id": head, "changes": changes})
        appended = [ev.node for ev in events if isinstance(ev, NodeAppended)]
        if appended:
            self.on_appended(sid, appended)

    # --- working dirs (workspace/binding.py) -------------------------------------------------
    async def unbound(self, sid: str, wd: str) -> None:
        log.info("session %s unbound: %s is gone", sid, wd)
        self.broadcast(sid, "session/did_unbind", {"session_id": sid, "working_dir": wd})

    async def rebound(self, sid: str, wd: str) -> None:
        log.info("session %s rebound: %s is back", sid, wd)
        self.broadcast(sid, "session/did_rebind", {"session_id": sid, "working_dir": wd})
