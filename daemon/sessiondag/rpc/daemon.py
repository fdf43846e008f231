"""The daemon's shared core (implements registry.DaemonCore): store, thread pool, the loaded
sessions (session_table.py) and their eviction (eviction.py), subscriptions and notifications,
working-dir binding and the watchers of the disk (disk_events.py: working dirs, other processes' writes,
deleted sessions).

Threading: store work runs in worker threads (`run_blocking`, bounded by a CapacityLimiter). Every
store write and catch-up takes the session lock (`Session.lock`: re-entrant per thread, exclusive
across threads and processes); reads run under it too (`run_session`) so they never see a graph
mid-update. Queued writes to one session run in one worker hop under `Session.batched()` (one
fdatasync for the batch, before any of them is answered). `session_lock` is the async lock that
serializes writes and agent turns per session.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import threading
import time
from typing import Any, Callable

import anyio

from .. import __version__
from ..context.aging import advance_aging
from ..core.errors import SessionDeletedError, StorageError, WorkingDirUnboundError, storage_error_from
from ..core.model import ROOT
from ..workspace.binding import WorkspaceBinding
from ..workspace.watcher import RestartableWatch
from . import codec
from .disk_events import DiskEvents, journal_present
from .eviction import Evictor
from .fd_budget import fds_open
from .session_table import SessionTable

log = logging.getLogger("sessiondag.daemon")


class Daemon(DiskEvents):
    def __init__(self, store: Any, *, max_threads: int = 8, max_frame: int = codec.MAX_FRAME,
                 idle_timeout: float | None = None, max_open_sessions: int | None = None,
                 session_idle_timeout: float | None = None, fd_reserve: int | None = None):
        self.store = store
        store.add_commit_hook(advance_aging)  # every commit this daemon makes advances the aging boundary
        self.max_threads = max_threads
        self.max_frame = max_frame
        self.idle_timeout = idle_timeout
        self.limiter: anyio.CapacityLimiter | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: set[Any] = set()
        self.subscribers: dict[str, set[Any]] = {}
        self.table = SessionTable()                 # the loaded sessions, their locks, tombstones
        self.sessions = self.table.sessions         # session id -> hooked Session
        self.evictor = Evictor(self, max_open=max_open_sessions, idle_after=session_idle_timeout,
                               reserve=fd_reserve)
        self.pending_changes: dict[str, list[dict[str, str]]] = {}
        self.transports: list[str] = []
        self.started_at = time.time()
        self.last_activity = time.monotonic()
        self._write_queues: dict[str, list[tuple[Callable[[], Any], asyncio.Future]]] = {}
        self._writers: set[str] = set()
        self._inbox: list[tuple[str, str | None, list[dict[str, Any]]]] = []
        self._inbox_lock = threading.Lock()
        self._inbox_scheduled = False
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self.binding = WorkspaceBinding(self._on_unbind, self._on_rebind, self._on_workspace_changes)
        self.binding.exclude = [store.state_dir]
        self.session_watch = RestartableWatch(
            "session-dirs", self._session_dirs, self._on_session_dirs, recursive=False,
            watch_filter=lambda change, path: os.path.basename(path) == "journal.log", debounce=200)
        self.deletion_watch = RestartableWatch(
            "sessions-dir", lambda: [store.sessions_dir], self._on_sessions_dir, recursive=False,
            watch_filter=lambda change, path: os.path.basename(path) in self.sessions, debounce=50)

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
        """Run a write on `session` under its async lock and the session lock, combined with the
        writes queued behind it: one worker thread hop runs every queued write in order inside
        `Session.batched()`, so a burst pays one thread hop and one fdatasync, and every write is
        durable before any of them is answered."""
        fut = self.loop.create_future()
        q = self._write_queues.setdefault(session.id, [])
        q.append((fn, fut))
        if session.id not in self._writers:
            self._writers.add(session.id)
            self.spawn(self._drain_writes(session))
        with self.table.pin(session.id):
            return await fut

    def has_queued_writes(self, sid: str) -> bool:
        return sid in self._writers or bool(self._write_queues.get(sid))

    async def _drain_writes(self, session: Any) -> None:
        sid = session.id
        try:
            while True:
                batch = [(fn, fut) for fn, fut in self._write_queues.pop(sid, []) if not fut.done()]
                if not batch:
                    return

                def run_all() -> list[tuple[bool, Any]]:
                    out = []
                    with session.lock:
                        with session.batched():  # one fdatasync for the batch, before any answer
                            for fn, _ in batch:
                                try:
                                    out.append((True, fn()))
                                except Exception as e:  # noqa: BLE001 - each write gets its own answer
                                    out.append((False, e))
                        # acknowledged must mean present: a journal deleted under us acks nothing
                        if any(ok for ok, _ in out) and not journal_present(session):
                            gone = SessionDeletedError(sid, "the session directory vanished during the write")
                            out = [(False, gone if ok else v) for ok, v in out]
                    return out
                async with self.session_lock(sid):
                    if self.table.buried(sid, session.path):
                        results = [(False, SessionDeletedError(sid))] * len(batch)
                    else:
                        try:
                            results = await anyio.to_thread.run_sync(run_all, limiter=self.limiter)
                        except Exception as e:  # noqa: BLE001 - the batch's fdatasync failed: none is durable
                            err = storage_error_from(e, "append") if isinstance(e, OSError) else e
                            results = [(False, err)] * len(batch)
                if any(isinstance(v, SessionDeletedError) for ok, v in results if not ok):
                    await self.session_deleted(sid, "the session directory vanished")
                for (_, fut), (ok, value) in zip(batch, results):
                    if not fut.done():
                        fut.set_result(value) if ok else fut.set_exception(value)
        finally:
            self._writers.discard(sid)
            if self._write_queues.get(sid):  # raced in while we were leaving
                self._writers.add(sid)
                self.spawn(self._drain_writes(session))

    def session_lock(self, session_id: str) -> Any:
        """`async with` it: the session's async lock (its table entry lives while held or awaited)."""
        return self.table.lock(session_id)

    def check_bound(self, session_id: str) -> None:
        if not self.binding.is_bound(session_id):
            raise WorkingDirUnboundError(session_id, self.binding.dirs.get(session_id))

    async def publish(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        self.broadcast(session_id, method, params)

    def broadcast(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        conns = self.subscribers.get(session_id)
        if not conns:
            return
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        for conn in list(conns):
            conn._send(msg)

    # --- sessions ----------------------------------------------------------------------------
    async def get_session(self, session_id: str) -> Any:
        """The loaded, hooked Session (raises the store's typed errors). Callers validated the id."""
        if self.table.buried(session_id, self.store.path_of(session_id)):
            raise SessionDeletedError(session_id)
        s = self.sessions.get(session_id)
        if s is not None and self.store._open.get(session_id) is s:
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
            self._unhook(old)
        s.listeners.append(self._listener)
        self.table.add(s.id, s)
        self.binding.add(s.id, s.info.get("working_dir"))
        return s

    def _unhook(self, s: Any) -> None:
        try:
            s.listeners.remove(self._listener)
        except ValueError:
            pass

    def drop(self, session_id: str, reason: str | None = None) -> None:
        """Forget a session and close it in the store (eviction, deletion); counted by `reason`."""
        s = self.table.remove(session_id)
        self.pending_changes.pop(session_id, None)
        self.binding.remove(session_id)
        if session_id in self.subscribers:
            self.session_watch.restart()
        if s is None:
            return
        self._unhook(s)
        self.store.release(session_id, s)
        if reason is not None:
            self.table.evictions[reason] += 1

    def forget(self, session_id: str) -> None:
        self.drop(session_id)

    def _listener(self, session: Any, records: list[dict[str, Any]]) -> None:
        """Called by the store (any thread) after records were applied to the graph. Records are
        queued and handed to the loop by one wake-up per burst, not one per record."""
        g = session._graph
        head = g.head_id if g is not None else None
        with self._inbox_lock:
            self._inbox.append((session.id, head, list(records)))
            if self._inbox_scheduled:
                return
            self._inbox_scheduled = True
        try:
            self.loop.call_soon_threadsafe(self._drain_inbox)
        except RuntimeError:  # loop closed during shutdown
            pass

    def _drain_inbox(self) -> None:
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
            self._inbox_scheduled = False
        for sid, head, records in items:
            self._on_records(sid, head, records)

    def _on_records(self, sid: str, head: str | None, records: list[dict[str, Any]]) -> None:
        changes: list[dict[str, Any]] = []
        user_turn = None
        for r in records:
            if "a" in r:
                node = r["a"]
                changes.append({"kind": "append", "node": node})
                if node.get("role") == "user" and node.get("caller") == ROOT and node.get("predecessor"):
                    user_turn = node["id"]
            elif "u" in r:
                changes.append({"kind": "update", "node_id": r["u"], "fields": r["f"]})
            elif "c" in r:
                changes.append({"kind": "checkout", "head_id": r["c"]})
            elif "n" in r:
                changes.append({"kind": "name", "head_id": r["n"], "name": r["v"]})
            elif "m" in r:
                changes.append({"kind": "meta", "key": r["m"]})
        if changes:
            self.broadcast(sid, "session/did_change", {"session_id": sid, "head_id": head, "changes": changes})
        if user_turn is not None and self.pending_changes.get(sid):
            self.spawn(self._attach_pending(sid, user_turn))

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
        subs = self.subscribers.setdefault(sid, set())
        if not subs:
            self.session_watch.restart()
        subs.add(conn)
        conn.subscriptions.add(sid)

    def unsubscribe(self, conn: Any, sid: str) -> bool:
        conn.subscriptions.discard(sid)
        subs = self.subscribers.get(sid)
        if not subs or conn not in subs:
            return False
        subs.discard(conn)
        if not subs:
            del self.subscribers[sid]
            self.session_watch.restart()
        return True

    def tables(self) -> dict[str, int]:
        """Sizes of everything kept per session or per client (bounded: tests watch these)."""
        from ..context import cache
        from ..runtime import loop
        return {**self.table.sizes(), "write_queues": len(self._write_queues), "writers": len(self._writers),
                "subscribers": len(self.subscribers), "bindings": len(self.binding.dirs),
                "pending_changes": len(self.pending_changes), "store_loaded": self.store.loaded(),
                "render_caches": len(cache._caches), "turn_locks": len(loop._turn_locks),
                "connections": len(self.connections), "tasks": len(self._tasks)}

    def status(self) -> dict[str, Any]:
        return {
            "limits": self.evictor.limits(), "fds_open": fds_open(), "tables": self.tables(),
            "evictions": dict(self.table.evictions),
            "version": __version__, "pid": os.getpid(), "state_dir": self.store.state_dir,
            "uptime_s": round(time.time() - self.started_at, 3), "transports": list(self.transports),
            "sessions_open": sorted(self.sessions),
            "unbound": sorted(s for s in self.sessions if not self.binding.is_bound(s)),
            "pending_workspace_changes": {s: len(v) for s, v in self.pending_changes.items() if v},
            "clients": [{"client_id": c.id, "transport": c.transport, "client_info": c.client_info,
                         "subscriptions": sorted(c.subscriptions), "in_flight": len(c.tasks)}
                        for c in sorted(self.connections, key=lambda c: c.id)],
        }

    # --- lifecycle ---------------------------------------------------------------------------
    def spawn(self, coro: Any) -> asyncio.Task:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.limiter = anyio.CapacityLimiter(self.max_threads)
        self._stop = asyncio.Event()
        self.spawn(self.binding.run())
        self.spawn(self.session_watch.run())
        self.spawn(self.deletion_watch.run())
        self.spawn(self._sweep())
        if self.idle_timeout:
            self.spawn(self._idle_watch())

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def wait_stopped(self) -> None:
        await self._stop.wait()

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.evictor.tick())
            try:
                self.evictor.sweep()
            except Exception:  # noqa: BLE001 - the sweeper must keep running
                log.exception("evicting idle sessions failed")

    async def _idle_watch(self) -> None:
        tick = min(1.0, self.idle_timeout / 4)
        while True:
            await asyncio.sleep(tick)
            if not self.connections and time.monotonic() - self.last_activity >= self.idle_timeout:
                log.info("idle for %.1fs with no clients: stopping", self.idle_timeout)
                self.stop()
                return

    async def commit_open_turns(self) -> list[str]:
        done = []
        for sid, s in list(self.sessions.items()):
            if s.open_turn:
                async with self.session_lock(sid):
                    try:
                        if await self.run_session(s, s.commit_turn) is not None:
                            done.append(sid)
                    except Exception:  # noqa: BLE001
                        log.exception("committing the open turn of %s failed", sid)
        return done

    async def shutdown(self) -> None:
        """Finish in-flight requests, stop sub-agents (finalized `cancelled`), commit open turns,
        stop the watchers."""
        from .agent_methods import stop_agents
        conns = list(self.connections)
        await asyncio.gather(*(c.wait_idle() for c in conns), return_exceptions=True)
        await stop_agents()
        await self.commit_open_turns()
        self.binding.close()
        self.session_watch.close()
        self.deletion_watch.close()
        for c in conns:
            await c.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

