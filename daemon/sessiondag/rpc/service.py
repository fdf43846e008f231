"""The session service: the one typed API the handlers (rpc/*_methods.py) call, over the daemon's
session-side parts (gopls: the server's handlers call the cache, never its insides).

It owns those parts and wires each with only what it uses:

- SessionTable (session_table.py): the loaded sessions, their async locks, pins and tombstones;
- Evictor (eviction.py): closes idle sessions before fds run out (it calls back `close`);
- WriteQueue (write_queue.py): queued writes, group-committed (one fdatasync per burst);
- Notifier (notifier.py): subscriptions, store events as `session/did_change`;
- DiskEvents (disk_events.py): session-dir watchers (other processes' writes, deletions);
- WorkspaceBinding + ChangeAttribution (workspace/): working dirs and file changes → turns;
- AgentState (agent_state.py): this daemon's agent turns, its default provider, MCP servers;
- AutoPush (auto_push.py): a push after each turn commit (sync.auto_push).

Threading: store work runs in worker threads (`blocking`, bounded by a CapacityLimiter). Every store
write and catch-up takes the session lock (`Session.lock`: re-entrant per thread, exclusive across
threads and processes); reads run under it too (`run`) so they never see a graph mid-update. `lock`
is the async lock that serializes writes and agent turns per session.

The daemon (rpc/daemon.py) is the host: its connections, lifecycle and status; the service reaches
it only through `Host`.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager
from typing import ParamSpec, Protocol, TypeVar

import anyio

from ..context.aging import advance_aging
from ..core.errors import SessionDeletedError, StorageError, WorkingDirUnboundError
from ..core.settings import Settings
from ..store.handles import SessionStore
from ..store.listing import SessionRow
from ..store.session import Session
from ..store.session_handle import HandleDict, SessionHandle
from ..workspace.attribution import ChangeAttribution
from ..workspace.binding import WorkspaceBinding
from ..workspace.checkpointer import install as install_checkpoints
from .agent_state import AgentState
from .auto_push import AutoPush
from .disk_events import DiskEvents
from .eviction import Evictor
from .notifier import Notifier
from .channel import DaemonClient
from .session_table import SessionTable
from .answer_now import LATER
from .write_queue import WriteQueue

log = logging.getLogger("sessiondag.daemon")
T = TypeVar("T")
P = ParamSpec("P")
WANT_FDS = 8  # fds a session load or creation takes: kept free before it


class Host(Protocol):
    """What the service needs of the daemon that hosts it."""

    def spawn(self, coro: Coroutine[object, None, None]) -> object:
        """Run a background task until it ends or the daemon shuts down."""

    def stop(self) -> None:
        """Stop the daemon (in-flight requests finish, open turns are committed)."""

    def status(self) -> dict[str, object]:
        """`daemon/status`."""


class SessionService:
    def __init__(self, store: SessionStore, host: Host, *, max_threads: int = 8,
                 max_open_sessions: int | None = None, session_idle_timeout: float | None = None,
                 fd_reserve: int | None = None):
        self._store = store
        self._host = host
        store.add_commit_hook(advance_aging)  # every commit this daemon makes advances the aging boundary
        self.snapshots = install_checkpoints(store)  # every turn commit snapshots the working dir
        self._limiter = anyio.CapacityLimiter(max_threads)
        self.closing: set[Session] = set()           # dropped sessions whose close runs in a worker thread
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connections: set[DaemonClient] = set()  # every client (the notifier's budget spans them)
        self.table = SessionTable()                  # the loaded sessions, their locks, tombstones
        self._agents = AgentState(store.settings())
        self.attribution = ChangeAttribution(self.table.sessions.get, self.run, host.spawn)
        self.notifier = Notifier(lambda: self._loop, self.attribution.on_appended, lambda: self.connections,
                                 host.spawn)
        self.writes = WriteQueue(self.table, host.spawn, self._limiter, self.session_deleted, lone=self._lone)
        self.evictor = Evictor(self.table, busy=self._busy, subscribed=lambda sid: bool(self.notifier.subscribers.get(sid)),
                               close=self.drop, max_open=max_open_sessions, idle_after=session_idle_timeout,
                               reserve=fd_reserve)
        self.auto_push = AutoPush(store, host.spawn, lambda: self._loop, self.blocking, self.table.sessions.get,
                                  self.broadcast)
        self.binding = WorkspaceBinding(self.notifier.unbound, self.notifier.rebound, self.attribution.on_changes)
        self.binding.exclude = [store.state_dir]
        self.binding.on_dirty, self.binding.on_watching = self.snapshots.mark_dirty, self.snapshots.on_watching
        self.binding.barrier.dir = os.path.join(store.state_dir, "watch-barrier")
        os.makedirs(self.binding.barrier.dir, mode=0o700, exist_ok=True)
        self.snapshots.barrier = self.binding.barrier.wait
        self.disk = DiskEvents(store, self.table, self.notifier, self.get, self.run, self.drop)

    def _lone(self) -> bool:
        """At most one request in flight over every client (the one asking)."""
        in_flight: int = sum(c.in_flight() for c in self.connections)
        return in_flight <= 1

    def _idle(self) -> bool:
        """No request in flight over every client (one answered in the read loop's turn has no task)."""
        return not any(c.in_flight() for c in self.connections)

    @property
    def agents(self) -> AgentState:
        """This daemon's agent turns, default provider and sessions' MCP servers (agent_state.py)."""
        return self._agents

    @property
    def settings(self) -> Settings:
        """The daemon's settings: resolved once at its start (`open_store`), its store's."""
        return self._store.settings()

    @property
    def store(self) -> SessionStore:
        """The store, for the library calls a handler hands it to (a turn, a push, a pull)."""
        return self._store

    def started(self) -> list[Callable[[], Coroutine[object, None, None]]]:
        """Called on the daemon's event loop when it starts: the background tasks to run."""
        self._loop = asyncio.get_running_loop()
        return [self.binding.run, self.disk.run_watchers, self.evictor.run]

    # --- worker threads ----------------------------------------------------------------------
    async def blocking(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run blocking store/git work off the event loop (bounded concurrency)."""
        if kwargs:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=self._limiter)
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    async def run(self, session: Session, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run `fn(*args)` in a worker thread holding the session lock (reads and writes)."""

        def call() -> T:
            with session.lock:
                return fn(*args, **kwargs)
        with self.table.pin(session.id):  # never evicted while a worker thread uses it
            return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    async def read(self, sid: str, fn: Callable[[Session], T]) -> T:
        """`fn(session)` under the session lock, in a worker thread."""
        s = await self.get(sid)
        return await self.run(s, fn, s)

    async def submit(self, session: Session, fn: Callable[[], T], *, quick: Callable[[], bool] | None = None) -> T:
        """Run a write on `session`, group-committed with the writes queued behind it (write_queue.py):
        durable before it is answered. `quick()` (asked under the session lock): `fn` stores no blob,
        so a lone write may run on the event loop, without a thread hop."""
        return await self.writes.submit(session, fn, quick=quick)

    def submit_now(self, session: Session, fn: Callable[[], T], *, quick: Callable[[], bool]) -> object:
        """`submit` done here and now, for a request answered in the read loop's turn (rpc/answer_now.py):
        `fn`'s result, or LATER (nothing done) when the write would wait or another request is in
        flight; its error raised; for a session found deleted, an awaitable announcing it and raising."""
        if not self._idle():
            return LATER
        done = self.writes.now(session, fn, quick)
        if done is None:
            return LATER
        ok, value = done
        if ok:
            return value
        if isinstance(value, SessionDeletedError):
            return self._deleted(session.id, value)
        raise value if isinstance(value, BaseException) else TypeError(f"a write failed with {value!r}")

    async def _deleted(self, sid: str, error: SessionDeletedError) -> None:
        await self.session_deleted(sid, "the session directory vanished")
        raise error

    async def write(self, sid: str, fn: Callable[[Session], T]) -> T:
        """`fn(session)` as a write: serialized per session, durable before it returns."""
        s = await self.get(sid)
        return await self.submit(s, lambda: fn(s))

    def lock(self, sid: str) -> AbstractAsyncContextManager[object]:
        """`async with` it: the session's async lock (its table entry lives while held or awaited)."""
        return self.table.lock(sid)

    # --- sessions ----------------------------------------------------------------------------
    async def get(self, sid: str) -> Session:
        """The loaded, hooked Session (raises the store's typed errors). Callers validated the id."""
        store = self._store
        if self.table.buried(sid, store.path_of(sid)):
            raise SessionDeletedError(sid)
        s = self.table.sessions.get(sid)
        if s is not None and store.loaded_session(sid) is s:
            self.table.touch(sid)
            return s
        self.evictor.enforce(want_fds=WANT_FDS)  # room for the session's fds before opening them
        try:
            s = await self.blocking(store.session, sid)
        except (OSError, StorageError) as e:  # the store types a load's OSError (errno kept)
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            self.evictor.enforce(want_fds=self.evictor.reserve // 2)
            s = await self.blocking(store.session, sid)
        if self.table.sessions.get(s.id) is not s:
            self._hook(s)
            await self.binding.wait_watching(s.id)  # changes from now on are seen
        self.evictor.enforce(keep=s.id)
        return s

    def loaded_now(self, sid: str) -> Session | None:
        """What `get` returns without waiting (the session loaded, hooked, not deleted: touched), else None."""
        store = self._store
        s = self.table.sessions.get(sid)
        if s is None or store.loaded_session(sid) is not s or self.table.buried(sid, store.path_of(sid)):
            return None
        self.table.touch(sid)
        return s

    def loaded(self, sid: str) -> Session | None:
        """The session if this daemon has it loaded (no load, no check)."""
        return self.table.sessions.get(sid)

    def _hook(self, s: Session) -> None:
        old = self.table.sessions.get(s.id)
        if old is not None:  # the store reloaded it behind our back (a turn thread after an eviction)
            old.remove_listener(self.notifier.listener)
            old.remove_listener(self.auto_push.listener)
        s.add_listener(self.notifier.listener)
        s.add_listener(self.auto_push.listener)
        self.table.add(s.id, s)
        self.binding.add(s.id, s.info.get("working_dir"))

    def drop(self, sid: str, reason: str | None = None) -> None:
        """Forget a session and close it in the store (eviction, deletion); counted by `reason`."""
        s = self.table.remove(sid)
        self.agents.mcp.release(sid)   # its MCP servers stop with it (agent_mcp.py)
        self.attribution.forget(sid)
        self.snapshots.forget(sid)
        self.binding.remove(sid)
        if sid in self.notifier.subscribers:
            self.disk.session_watch.restart()
        if s is None:
            return
        s.remove_listener(self.notifier.listener)
        s.remove_listener(self.auto_push.listener)
        if s.baseline is not None:
            # its close settles or stops a first snapshot under way (seconds, up to the snapshot's
            # budget: runtime/baseline.py), so it runs in a worker thread, never on the event loop
            self.closing.add(s)
            self._host.spawn(self._close_off_loop(sid, s))
        else:
            self._store.release(sid, s)
        if reason is not None:
            self.table.count_eviction(reason)

    async def _close_off_loop(self, sid: str, s: Session) -> None:
        """Close a dropped session in a worker thread (not one of the requests' bounded ones); a
        shutdown waits for it (the thread is not abandoned)."""
        try:
            await anyio.to_thread.run_sync(self._store.release, sid, s)
        finally:
            self.closing.discard(s)

    def _busy(self) -> set[str]:
        """Sessions something besides the table's pins and locks uses (eviction.py asks): a turn or
        sub-agents running, queued writes, file changes held for the next turn, a first snapshot
        under way (closing its session would wait for it: runtime/baseline.py)."""
        held = {sid for sid in self.attribution.pending if self.attribution.holds(sid)}
        held |= {sid for sid, s in list(self.table.sessions.items()) if s.baseline is not None}
        return self.agents.busy_sessions() | self.writes.busy_sessions() | held

    async def _handle(self, fn: Callable[[], SessionHandle]) -> HandleDict:
        """Run a store lifecycle call (open/start/resume) and hook the session it returns."""
        self.evictor.enforce(want_fds=WANT_FDS)  # room for the fds a creation or load takes
        h = await self.blocking(fn)
        self.table.unbury(h.id)  # it exists now (created again after a deletion)
        s = await self.get(h.id)
        self.binding.add(s.id, s.info.get("working_dir"))  # a resume may have moved it (a rebind)
        handle = await self.run(s, self._store.handle, s)
        return handle.to_dict()

    async def open(self, sid: str | None, working_dir: str | None, *,
                   allow_working_dir_mismatch: bool = False, rebind: bool = False) -> HandleDict:
        return await self._handle(functools.partial(self._store.open_session, sid, working_dir=working_dir,
                                                    allow_working_dir_mismatch=allow_working_dir_mismatch,
                                                    rebind=rebind))

    async def start(self, sid: str | None, working_dir: str | None) -> HandleDict:
        return await self._handle(functools.partial(self._store.start_session, sid, working_dir=working_dir))

    async def resume(self, sid: str, working_dir: str | None, *,
                     allow_working_dir_mismatch: bool = False) -> HandleDict:
        return await self._handle(functools.partial(self._store.resume_session, sid, working_dir=working_dir,
                                                    allow_working_dir_mismatch=allow_working_dir_mismatch))

    async def list_sessions(self, working_dir: str | None) -> list[SessionRow]:
        return await self.blocking(self._store.list_sessions, working_dir)

    async def reset(self, sid: str) -> bool:
        """Delete the session's data; its subscribers get `session/did_delete` (detail "reset")."""
        async with self.lock(sid):
            s = self.table.sessions.get(sid)
            if s is not None:
                self.table.bury_loaded(sid)  # the watcher will see it go: not news
                try:
                    dropped = await self.run(s, self._store.reset_session, sid)
                finally:
                    self.table.unbury(sid)
            else:
                dropped = await self.blocking(self._store.reset_session, sid)
            if s is not None:
                self.disk.announce_deleted(sid, "reset")
            self.drop(sid)
        await self.agents.mcp.forget(sid)   # its MCP servers stop with it
        return bool(dropped)

    async def commit_open_turns(self) -> list[str]:
        """Commit every loaded session's open turn (shutdown); the sessions committed."""
        done = []
        for sid, s in list(self.table.sessions.items()):
            if s.open_turn:
                async with self.lock(sid):
                    try:
                        if await self.run(s, s.commit_turn) is not None:
                            done.append(sid)
                    except Exception:  # noqa: BLE001 - the others are still committed
                        log.exception("committing the open turn of %s failed", sid)
        return done

    # --- deletions and working dirs ----------------------------------------------------------
    async def session_deleted(self, sid: str, detail: str) -> None:
        await self.disk.session_deleted(sid, detail)

    async def check_present(self, sid: str) -> None:
        """Raise SessionDeletedError if the session's directory went away (announcing it once)."""
        await self.disk.check_present(sid)

    def check_bound(self, sid: str) -> None:
        """Raise WorkingDirUnboundError if the session's working dir is gone."""
        if not self.binding.is_bound(sid):
            raise WorkingDirUnboundError(sid, self.binding.dirs.get(sid))

    def is_bound(self, sid: str) -> bool:
        return self.binding.is_bound(sid)

    # --- clients and notifications -----------------------------------------------------------
    def attach(self, conn: DaemonClient) -> None:
        self.connections.add(conn)
        self.evictor.enforce(want_fds=WANT_FDS)  # keep the reserve: the next client must get in too

    def detach(self, conn: DaemonClient) -> None:
        self.connections.discard(conn)
        for sid in list(conn.subscriptions):
            self.unsubscribe(conn, sid)

    async def subscribe(self, client: DaemonClient, sid: str) -> str:
        """Subscribe `client` to the session; answered once other processes' writes to it are seen.
        Returns its head."""
        s = await self.get(sid)
        if self.notifier.subscribe(client, sid):
            self.disk.session_watch.restart()
        path = self._store.path_of(sid)
        await self.disk.session_watch.wait_watching(lambda watching: path in watching)
        return await self.run(s, lambda: s.head_id)

    def unsubscribe(self, client: DaemonClient, sid: str) -> bool:
        was, last = self.notifier.unsubscribe(client, sid)
        if last:
            self.disk.session_watch.restart()
        return was

    def subscribers(self, sid: str) -> list[DaemonClient]:
        return list(self.notifier.subscribers.get(sid, ()))

    def broadcast(self, sid: str, method: str, params: dict[str, object]) -> None:
        """Send a notification to every client subscribed to the session."""
        self.notifier.broadcast(sid, method, params)

    # --- figures (daemon/status) -------------------------------------------------------------
    def tables(self) -> dict[str, int]:
        """Sizes of what the service keeps per session or per client (bounded: tests watch these)."""
        return {**self.table.sizes(), "write_queues": len(self.writes.queues), "writers": len(self.writes.writers),
                "subscribers": len(self.notifier.subscribers), "bindings": len(self.binding.dirs),
                "pending_changes": len(self.attribution.pending), "turn_locks": self.agents.turn_locks()}

    def figures(self) -> dict[str, object]:
        """The service's part of `daemon/status`: limits, evictions, notifications, sessions, turns."""
        return {
            "limits": self.evictor.limits(), "notifications": self.notifier.figures(),
            "evictions": dict(self.table.evictions), "auto_push": self.auto_push.status(),
            "sessions_open": sorted(self.table.sessions), "unbound": sorted(self.unbound()),
            "pending_workspace_changes": {s: len(v) for s, v in self.attribution.pending.items() if v},
            "running_turns": self.agents.running_turns(), "defaults": self.agents.provider_defaults(),
        }

    # --- the daemon --------------------------------------------------------------------------
    def status(self) -> dict[str, object]:
        return self._host.status()

    def stop_soon(self) -> None:
        """Stop the daemon once the current request is answered."""
        asyncio.get_running_loop().call_soon(self._host.stop)

    def close_watchers(self) -> None:
        """Shutdown: stop watching working dirs and session dirs."""
        self.binding.close()
        self.disk.close()

    def unbound(self) -> Iterator[str]:
        return (s for s in self.table.sessions if not self.binding.is_bound(s))
