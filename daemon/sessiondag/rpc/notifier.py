"""Notifications to the clients subscribed to a session.

The daemon hooks `Notifier.listener` on every session it loads (store/events.py). The store calls it
in whatever thread made or noticed the change, holding the session lock; the events are queued and
handed to the event loop by one wake-up per burst, not one per write. On the loop each batch becomes
one `session/did_change` {session_id, head_id, changes} (append, update, checkout, name, meta,
reload: the graph was rebuilt from disk, e.g. another process rotated the journal past what this
one could follow, noticed by a write or by the session-dir watcher, disk_events.py; restore: the
working dir's files were put back, docs/checkpoints.md), and the nodes it appended are
passed on to `on_appended(sid, nodes)` (workspace-change attribution).

Slow readers are bounded by one budget across clients: a client with more than LAG_BYTES unread,
or any client with something unread while all of them together have more than BUDGET_BYTES, gets
no further `session/did_change` queued for it: they are coalesced, per session, into one `reload`
change that is sent once the client has read what was queued (its transport drained), so a laggard
re-reads instead of the daemon holding every change for it. `figures()` is the accounting
(daemon/status `notifications`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import cast

import anyio

from ..store.events import (BranchNamed, Event, FilesRestored, HeadMoved, MetaChanged, NodeAppended, NodeUpdated,
                            Reloaded)
from ..store.session import Session
from .channel import DaemonClient

log = logging.getLogger("sessiondag.daemon")
BUDGET_BYTES = 64 << 20   # notifications queued for all clients together
LAG_BYTES = 4 << 20       # queued for one client


def change_of(ev: Event) -> dict[str, object] | None:
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
    if isinstance(ev, FilesRestored):
        return {"kind": "restore", "node_id": ev.node_id, "checkpoint": ev.checkpoint, "paths": ev.paths}
    return None


class Notifier:
    def __init__(self, loop: Callable[[], asyncio.AbstractEventLoop | None],
                 on_appended: Callable[[str, list[Mapping[str, object]]], None],
                 connections: Callable[[], Iterable[DaemonClient]] = lambda: (),
                 spawn: Callable[[Coroutine[object, None, None]], object] | None = None):
        self.loop, self.on_appended = loop, on_appended   # loop(): the daemon's event loop
        self.spawn = spawn                                # the daemon's background tasks (lifecycle.py)
        self.connections = connections                    # every client (the budget is across all)
        self.lagging: dict[DaemonClient, dict[str, str | None]] = {}  # client -> {session id: last head} coalesced
        self.peak_queued = self.coalesced = self.reloads_sent = 0
        self.subscribers: dict[str, set[DaemonClient]] = {}    # session id -> subscribed connections
        self._inbox: list[tuple[str, str | None, list[Event]]] = []
        self._inbox_lock = threading.Lock()
        self._scheduled = False

    # --- subscriptions -----------------------------------------------------------------------
    def subscribe(self, conn: DaemonClient, sid: str) -> bool:
        """True if `sid` had no subscriber before (the watched set changes)."""
        subs = self.subscribers.setdefault(sid, set())
        first = not subs
        subs.add(conn)
        conn.subscriptions.add(sid)
        return first

    def unsubscribe(self, conn: DaemonClient, sid: str) -> tuple[bool, bool]:
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

    def broadcast(self, sid: str, method: str, params: dict[str, object]) -> None:
        conns = self.subscribers.get(sid)
        if not conns:
            return
        msg: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
        change = method == "session/did_change"
        total = self.queued() if change else 0
        for conn in list(conns):
            if change and self._lags(conn, total):
                self._coalesce(conn, sid, cast("str | None", params.get("head_id")))   # did_change's
                continue
            conn.send(msg)
        if change:
            self.peak_queued = max(self.peak_queued, self.queued())

    # --- slow readers (the budget) -----------------------------------------------------------
    def queued(self) -> int:
        """Bytes queued for all clients and not yet taken by the kernel."""
        return sum(c.outbox.backlog() for c in self.connections())

    def _lags(self, conn: DaemonClient, total: int) -> bool:
        if conn in self.lagging:
            return True
        mine = conn.outbox.backlog()
        return mine > LAG_BYTES or (mine > 0 and total > BUDGET_BYTES)

    def _coalesce(self, conn: DaemonClient, sid: str, head: str | None) -> None:
        self.coalesced += 1
        waiting = self.lagging.get(conn)
        if waiting is None:
            waiting = self.lagging[conn] = {}
            assert self.spawn is not None, "a notifier that coalesces needs the daemon's spawn"
            self.spawn(self._catch_up(conn))
        waiting[sid] = head

    async def _catch_up(self, conn: DaemonClient) -> None:
        """Once the laggard has read what was queued: one `reload` per session it missed changes of."""
        try:
            while not conn.closed:
                try:
                    await conn.writer.drain()  # returns once the transport is below its low-water mark
                except (ConnectionError, RuntimeError):
                    return
                if conn.outbox.backlog() <= LAG_BYTES // 4:
                    break
                await anyio.sleep(0.05)  # a bulk frame still going out: look again
            if conn.closed:
                return
            for sid, head in self.lagging.pop(conn, {}).items():
                if sid in conn.subscriptions:
                    self.reloads_sent += 1
                    conn.send({"jsonrpc": "2.0", "method": "session/did_change",
                               "params": {"session_id": sid, "head_id": head, "changes": [{"kind": "reload"}]}})
        finally:
            self.lagging.pop(conn, None)

    def figures(self) -> dict[str, int]:
        return {"budget_bytes": BUDGET_BYTES, "lag_bytes": LAG_BYTES, "queued_bytes": self.queued(),
                "peak_queued_bytes": self.peak_queued, "coalesced": self.coalesced,
                "reloads_sent": self.reloads_sent, "lagging": len(self.lagging)}

    # --- store events ------------------------------------------------------------------------
    def listener(self, session: Session, events: list[Event]) -> None:
        """The store listener (any thread, under the session lock): queue, wake the loop once."""
        g = session.loaded_graph
        head = g.head_id if g is not None else None
        with self._inbox_lock:
            self._inbox.append((session.id, head, events))
            if self._scheduled:
                return
            self._scheduled = True
        loop = self.loop()
        assert loop is not None, "the daemon has not started"
        try:
            if _running(loop):  # a write on the loop itself (write_queue.py): no wake-up through its pipe
                loop.call_soon(self._drain)
            else:
                loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # loop closed during shutdown
            pass

    def _drain(self) -> None:
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
            self._scheduled = False
        for sid, head, events in items:
            self._announce(sid, head, events)

    def _announce(self, sid: str, head: str | None, events: list[Event]) -> None:
        changes = [c for c in map(change_of, events) if c is not None]
        if changes:
            self.broadcast(sid, "session/did_change", {"session_id": sid, "head_id": head, "changes": changes})
        appended: list[Mapping[str, object]] = [ev.node for ev in events if isinstance(ev, NodeAppended)]
        if appended:
            self.on_appended(sid, appended)

    # --- working dirs (workspace/binding.py) -------------------------------------------------
    async def unbound(self, sid: str, wd: str) -> None:
        log.info("session %s unbound: %s is gone", sid, wd)
        self.broadcast(sid, "session/did_unbind", {"session_id": sid, "working_dir": wd})

    async def rebound(self, sid: str, wd: str) -> None:
        log.info("session %s rebound: %s is back", sid, wd)
        self.broadcast(sid, "session/did_rebind", {"session_id": sid, "working_dir": wd})


def _running(loop: asyncio.AbstractEventLoop) -> bool:
    """Is this thread running `loop`?"""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
