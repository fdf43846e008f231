"""The session-dir watcher: what the daemon does when a session changes on disk under it.

- other processes' writes: the directories of subscribed sessions are watched (their journals only,
  `SessionStore.journal_session`); a change catches the session up (`Session.refresh`), which fires
  the store listeners and so the notifications (notifier.py);
- sessions deleted under the daemon: the sessions directory is watched (non-recursive) and each write
  checks, under the session lock and after its fdatasync, that the journal it wrote is still the one
  at the session's path (`Session.on_disk`, write_queue.py). A deleted session is buried (writes
  answer `session_deleted`), announced (`session/did_delete`) and closed once nothing uses it.

Working dirs are watched by workspace/binding.py, their changes attributed by workspace/attribution.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import anyio

from ..core.errors import SessionDeletedError
from ..store.handles import SessionStore
from ..store.session import Session
from ..workspace.notify import Changes
from ..workspace.watcher import RestartableWatch
from .notifier import Notifier
from .session_table import SessionTable

log = logging.getLogger("sessiondag.daemon")

T = TypeVar("T")


class RunLocked(Protocol):
    """The service's `run`: `fn()` in a worker thread holding the session's lock."""

    def __call__(self, session: Session, fn: Callable[[], T], /) -> Awaitable[T]: ...


class DiskEvents:
    """Uses the store (its paths), the table (loaded sessions, tombstones), the notifier (subscribers,
    announcements) and three calls of the service: `load` a session, `run` work under its lock and
    `close` it."""

    def __init__(self, store: SessionStore, table: SessionTable, notifier: Notifier,
                 load: Callable[[str], Awaitable[Session]], run: RunLocked,
                 close: Callable[[str, str], None]):
        self.store, self.table, self.notifier = store, table, notifier
        self.load, self.run, self.close_session = load, run, close
        sessions = table.sessions
        self.session_watch = RestartableWatch(
            "session-dirs", self._session_dirs, self._on_session_dirs, recursive=False,
            watch_filter=lambda change, path: store.journal_session(path) is not None, debounce=200)
        self.deletion_watch = RestartableWatch(
            "sessions-dir", lambda: [store.sessions_dir], self._on_sessions_dir, recursive=False,
            watch_filter=lambda change, path: store.session_id_at(path) in sessions, debounce=50)

    async def run_watchers(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.session_watch.run)
            tg.start_soon(self.deletion_watch.run)

    def close(self) -> None:
        self.session_watch.close()
        self.deletion_watch.close()

    # --- deletions ---------------------------------------------------------------------------
    async def session_deleted(self, sid: str, detail: str) -> None:
        """The session's directory is gone (reset by another process, rm -rf): refuse further writes
        (`session_deleted`), tell the subscribers, and close it once nothing uses it."""
        table = self.table
        if table.is_buried(sid) or sid not in table.sessions:
            return
        log.warning("session %s was deleted under the daemon: %s", sid, detail)
        table.bury_loaded(sid)
        self.announce_deleted(sid, detail)
        if not table.in_use(sid):
            self.close_session(sid, "deleted")

    def announce_deleted(self, sid: str, detail: str) -> None:
        """`session/did_delete` to the session's subscribers, who are unsubscribed."""
        self.notifier.broadcast(sid, "session/did_delete", {"session_id": sid, "detail": detail})
        last = False
        for conn in list(self.notifier.subscribers.get(sid, ())):
            last = self.notifier.unsubscribe(conn, sid)[1] or last
        if last:
            self.session_watch.restart()

    async def check_present(self, sid: str) -> None:
        """Raise SessionDeletedError if the session's directory went away (announcing it once)."""
        if self.table.gone(sid) or self.table.is_buried(sid):
            await self.session_deleted(sid, "the session directory vanished")
            raise SessionDeletedError(sid)

    async def _on_sessions_dir(self, changes: Changes) -> None:
        for sid in {self.store.session_id_at(path) for _, path in changes} - {None}:
            assert sid is not None
            if self.table.gone(sid):
                await self.session_deleted(sid, "the session directory was removed or replaced")

    # --- other processes' writes -------------------------------------------------------------
    def _session_dirs(self) -> list[str]:
        """Subscribed sessions' dirs, loaded or not (fd pressure may close a subscribed session)."""
        return [self.store.path_of(sid) for sid in self.notifier.subscribers]

    async def _on_session_dirs(self, changes: Changes) -> None:
        for sid in {self.store.journal_session(path) for _, path in changes} - {None}:
            assert sid is not None
            if self.table.gone(sid):
                await self.session_deleted(sid, "the session directory was removed or replaced")
            elif sid in self.notifier.subscribers:
                await self._catch_up(sid)

    async def _catch_up(self, sid: str) -> None:
        """Another process wrote a subscribed session: catching up fires the listeners for every
        new record, and a `reload` change if the graph was rebuilt (a rotation elsewhere we could
        not follow); a session closed here under fd pressure is announced as a `reload` here."""
        s = self.table.sessions.get(sid)
        reload = s is None
        if s is None:
            if not os.path.isdir(self.store.path_of(sid)):
                self.announce_deleted(sid, "the session directory was removed")
                return
            try:
                s = await self.load(sid)
            except Exception:  # noqa: BLE001
                log.warning("reloading subscribed session %s failed", sid, exc_info=True)
                return
        loaded = s

        def refresh() -> tuple[bool, str | None]:
            return loaded.refresh(), loaded.graph.head_id
        try:
            reloaded, head = await self.run(s, refresh)
        except Exception:  # noqa: BLE001
            log.warning("refreshing session %s failed", sid, exc_info=True)
            return
        if reload and not reloaded:  # closed here meanwhile (a reload of the graph announces itself)
            self.notifier.broadcast(sid, "session/did_change",
                                    {"session_id": sid, "head_id": head, "changes": [{"kind": "reload"}]})
