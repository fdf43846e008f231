"""The daemon's shared core (implements registry.DaemonCore): the store, the worker threads, the loaded
sessions and the clients. Each job is its own part:

- session_table.py: the loaded sessions, their async locks, pins and tombstones; eviction.py and
  fd_budget.py: when loaded sessions are closed;
- write_queue.py: queued writes to a session, group-committed (one fdatasync per burst);
- notifier.py: subscriptions, and the store's change events (store/events.py) as `session/did_change`;
- disk_events.py: the session-dir watcher (other processes' writes, sessions deleted under us);
- workspace/binding.py + workspace/attribution.py: working dirs and the turn a file change belongs to;
- agent_state.py: the agent turns this daemon runs (its own, even with two daemons in one process);
- lifecycle.py: start, stop and shutdown.

Threading: store work runs in worker threads (`run_blocking`, bounded by a CapacityLimiter). Every
store write and catch-up takes the session lock (`Session.lock`: re-entrant per thread, exclusive
across threads and processes); reads run under it too (`run_session`) so they never see a graph
mid-update. `session_lock` is the async lock that serializes writes and agent turns per session.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import time
from typing import Any, Callable

import anyio

from .. import __version__
from ..context.aging import advance_aging
from ..context.cache import cache_count
from ..core.errors import SessionDeletedError, StorageError, WorkingDirUnboundError
from ..workspace.attribution import ChangeAttribution
from ..workspace.binding import WorkspaceBinding
from ..workspace.checkpointer import install as install_checkpoints
from . import codec
from .agent_state import AgentState
from .disk_events import DiskEvents
from .eviction import Evictor
from .fd_budget import fds_open
from .lifecycle import Lifecycle
from .auto_push import AutoPush
from .notifier import Notifier
from .session_table import SessionTable
from .write_queue import WriteQueue


class Daemon(Lifecycle):
    def __init__(self, store: Any, *, max_threads: int = 8, max_frame: int = codec.MAX_FRAME,
                 idle_timeout: float | None = None, max_open_sessions: int | None = None,
                 session_idle_timeout: float | None = None, fd_reserve: int | None = None):
        self.store = store
        store.add_commit_hook(advance_aging)  # every commit this daemon makes advances the aging boundary
        self.snapshots = install_checkpoints(store)  # every turn commit snapshots the working dir
        self.max_threads = max_threads
        self.max_frame = max_frame
        self.idle_timeout = idle_timeout
        self.limiter: anyio.CapacityLimiter | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: set[Any] = set()
        self.table = SessionTable()                 # the loaded sessions, their locks, tombstones
        self.sessions = self.table.sessions         # session id -> hooked Session
        self.evictor = Evictor(self, max_open=max_open_sessions, idle_after=session_idle_timeout,
                               reserve=fd_reserve)
        self.writes = WriteQueue(self)
        self.attribution = ChangeAttribution(self.sessions.get, self.run_session, self.spawn)
        self.notifier = Notifier(lambda: self.loop, self.attribution.on_appended, lambda: self.connections)
        self.auto_push = AutoPush(self)             # sync.auto_push: a push after each turn commit
        self.subscribers = self.notifier.subscribers  # session id -> subscribed connections
        self.agents = AgentState()
        self.transports: list[str] = []
        self.started_at = time.time()
        self.last_activity = time.monotonic()
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self.binding = WorkspaceBinding(self.notifier.unbound, self.notifier.rebound, self.attribution.on_changes)
        self.binding.exclude = [store.state_dir]
        self.binding.on_dirty, self.binding.on_watching = self.snapshots.mark_dirty, self.snapshots.on_watching
        self.binding.barrier.dir = os.path.join(store.state_dir, "watch-barrier")
        os.makedirs(self.binding.barrier.dir, mode=0o700, exist_ok=True)
        self.snapshots.barrier = self.binding.barrier.wait
        self.disk = DiskEvents(self)
        self.session_watch = self.disk.session_watch  # session/subscribe waits until it watches

    # --- DaemonCore --------------------------------------------------------------------------
    async def run_blocking(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            fn = functools.partial(fn, *args, **kwargs)
            args = ()
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    async def run_session(self, session: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run `fn(*args)` in a worker thread holding the session lock (reads and writes)."""

        def call() -> Any:
            with session.lock:
                return fn(*args, **kwargs)
        with self.table.pin(session.id):  # never evicted while a worker thread uses it
            return await anyio.to_thread.run_sync(call, limiter=self.limiter)

    async def submit_write(self, session: Any, fn: Callable[[], Any]) -> Any:
        """Run a write on `session`, group-committed with the writes queued behind it (write_queue.py):
        durable before it is answered."""
        return await self.writes.submit(session, fn)

    def has_queued_writes(self, sid: str) -> bool:
        return self.writes.busy(sid)

    def session_lock(self, session_id: str) -> Any:
        """`async with` it: the session's async lock (its table entry lives while held or awaited)."""
        return self.table.lock(session_id)

    def check_bound(self, session_id: str) -> None:
        if not self.binding.is_bound(session_id):
            raise WorkingDirUnboundError(session_id, self.binding.dirs.get(session_id))

    async def publish(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        self.broadcast(session_id, method, params)

    def broadcast(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        self.notifier.broadcast(session_id, method, params)

    async def session_deleted(self, sid: str, detail: str) -> None:
        await self.disk.session_deleted(sid, detail)

    async def check_present(self, sid: str) -> None:
        """Raise SessionDeletedError if the session's directory went away (announcing it once)."""
        await self.disk.check_present(sid)

    # --- sessions ----------------------------------------------------------------------------
    async def get_session(self, session_id: str) -> Any:
        """The loaded, hooked Session (raises the store's typed errors). Callers validated the id."""
        if self.table.buried(session_id, self.store.path_of(session_id)):
            raise SessionDeletedError(session_id)
        s = self.sessions.get(session_id)
        if s is not None and self.store.loaded_session(session_id) is s:
            self.table.touch(session_id)
            return s
        self.evictor.enforce(want_fds=8)  # room for the session's fds before opening them
        try:
            s = await self.run_blocking(self.store.session, session_id)
        except (OSError, StorageError) as e:  # the store types a load's OSError (errno kept)
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            self.evictor.enforce(want_fds=self.evictor.reserve // 2)
            s = await self.run_blocking(self.store.session, session_id)
        if self.sessions.get(s.id) is not s:
            self.hook(s)
            await self.binding.wait_watching(s.id)  # changes from now on are seen
        self.evictor.enforce(keep=s.id)
        return s

    def hook(self, s: Any) -> Any:
        if self.sessions.get(s.id) is s:
            return s
        old = self.sessions.get(s.id)
        if old is not None:  # the store reloaded it behind our back (a turn thread after an eviction)
            old.remove_listener(self.notifier.listener)
            old.remove_listener(self.auto_push.listener)
        s.add_listener(self.notifier.listener)
        s.add_listener(self.auto_push.listener)
        self.table.add(s.id, s)
        self.binding.add(s.id, s.info.get("working_dir"))
        return s

    def drop(self, session_id: str, reason: str | None = None) -> None:
        """Forget a session and close it in the store (eviction, deletion); counted by `reason`."""
        s = self.table.remove(session_id)
        self.agents.mcp.release(session_id)   # its MCP servers stop with it (agent_mcp.py)
        self.attribution.forget(session_id)
        self.snapshots.forget(session_id)
        self.binding.remove(session_id)
        if session_id in self.subscribers:
            self.session_watch.restart()
        if s is None:
            return
        s.remove_listener(self.notifier.listener)
        s.remove_listener(self.auto_push.listener)
        self.store.release(session_id, s)
        if reason is not None:
            self.table.evictions[reason] += 1

    def forget(self, session_id: str) -> None:
        self.drop(session_id)

    # --- connections -------------------------------------------------------------------------
    def attach(self, conn: Any) -> None:
        self.connections.add(conn)
        self.last_activity = time.monotonic()
        self.evictor.enforce(want_fds=8)  # keep the reserve: the next client must get in too

    def detach(self, conn: Any) -> None:
        self.connections.discard(conn)
        for sid in list(conn.subscriptions):
            self.unsubscribe(conn, sid)
        self.last_activity = time.monotonic()

    def subscribe(self, conn: Any, sid: str) -> None:
        if self.notifier.subscribe(conn, sid):
            self.session_watch.restart()

    def unsubscribe(self, conn: Any, sid: str) -> bool:
        was, last = self.notifier.unsubscribe(conn, sid)
        if last:
            self.session_watch.restart()
        return was

    # --- status ------------------------------------------------------------------------------
    def tables(self) -> dict[str, int]:
        """Sizes of everything kept per session or per client (bounded: tests watch these)."""
        return {**self.table.sizes(), "write_queues": len(self.writes.queues), "writers": len(self.writes.writers),
                "subscribers": len(self.subscribers), "bindings": len(self.binding.dirs),
                "pending_changes": len(self.attribution.pending), "store_loaded": self.store.loaded(),
                "render_caches": cache_count(), "turn_locks": self.agents.turn_locks(),
                "connections": len(self.connections), "tasks": len(self._tasks)}

    def status(self) -> dict[str, Any]:
        return {
            "limits": self.evictor.limits(), "fds_open": fds_open(), "tables": self.tables(),
            "notifications": self.notifier.figures(),
            "evictions": dict(self.table.evictions), "auto_push": self.auto_push.status(),
            "version": __version__, "pid": os.getpid(), "state_dir": self.store.state_dir,
            "uptime_s": round(time.time() - self.started_at, 3), "transports": list(self.transports),
            "sessions_open": sorted(self.sessions),
            "unbound": sorted(s for s in self.sessions if not self.binding.is_bound(s)),
            "pending_workspace_changes": {s: len(v) for s, v in self.attribution.pending.items() if v},
            "clients": [{"client_id": c.id, "transport": c.transport, "client_info": c.client_info,
                         "subscriptions": sorted(c.subscriptions), "in_flight": len(c.tasks)}
                        for c in sorted(self.connections, key=lambda c: c.id)],
        }
