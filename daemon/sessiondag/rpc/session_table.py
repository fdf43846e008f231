"""The sessions a daemon has loaded, and everything it keeps per session, bounded.

- `sessions` (id -> hooked Session) with LRU order and last-use times (`touch`), pins held while a
  worker thread uses a session (`pin`), and the identity (dev, inode) of its directory when loaded
  (a directory deleted or replaced under the daemon is noticed by comparing it).
- Per-session async locks (`lock(sid)`): an entry exists only while somebody holds or waits for
  the lock, so the table never outgrows the requests in flight.
- Tombstones of sessions deleted under the daemon (bounded, oldest dropped first), so a write that
  arrives afterwards gets `session_deleted` rather than a generic `missing`.

Entries are keyed only by ids that passed `check_session_id` and named a session that exists: the
callers validate before they allocate anything here.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import anyio

if TYPE_CHECKING:
    from ..store.session import Session

MAX_TOMBSTONES = 4096


def dir_ident(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class _LockSlot:
    """A session's async lock and how many hold it or wait for it (its table entry goes at 0)."""

    __slots__ = ("lock", "holders")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.holders = 0


class _Hold:
    """`async with table.lock(sid):` — the session's async lock, its table entry refcounted."""

    __slots__ = ("table", "sid", "slot")

    def __init__(self, table: "SessionTable", sid: str):
        self.table, self.sid = table, sid
        self.slot: _LockSlot | None = None

    async def __aenter__(self) -> "_Hold":
        slot = self.table.locks.get(self.sid)
        if slot is None:
            slot = self.table.locks[self.sid] = _LockSlot()
        slot.holders += 1
        try:
            await slot.lock.acquire()
        except BaseException:
            self._leave(slot)
            raise
        self.slot = slot
        return self

    async def __aexit__(self, *exc: object) -> None:
        slot, self.slot = self.slot, None
        assert slot is not None
        slot.lock.release()
        self._leave(slot)

    def _leave(self, slot: _LockSlot) -> None:
        slot.holders -= 1
        if slot.holders == 0 and self.table.locks.get(self.sid) is slot:
            del self.table.locks[self.sid]


class SessionTable:
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.used: OrderedDict[str, float] = OrderedDict()   # LRU order: least recently used first
        self.pins: dict[str, int] = {}
        self.idents: dict[str, tuple[int, int] | None] = {}
        self.locks: dict[str, _LockSlot] = {}                    # sid -> its lock, holders + waiters
        self.deleted: OrderedDict[str, tuple[int, int] | None] = OrderedDict()
        self.evictions = {"idle": 0, "lru": 0, "fds": 0, "deleted": 0}

    # --- membership --------------------------------------------------------------------------
    def add(self, sid: str, session: Session) -> None:
        self.sessions[sid] = session
        self.idents[sid] = dir_ident(session.path)
        self.deleted.pop(sid, None)
        self.touch(sid)

    def remove(self, sid: str) -> Session | None:
        self.used.pop(sid, None)
        self.idents.pop(sid, None)
        return self.sessions.pop(sid, None)

    def touch(self, sid: str) -> None:
        self.used[sid] = time.monotonic()
        self.used.move_to_end(sid)

    def lru(self) -> list[str]:
        return list(self.used)

    def idle_for(self, sid: str, now: float) -> float:
        return now - self.used.get(sid, now)

    def gone(self, sid: str) -> bool:
        """True if the session's directory is no longer the one that was loaded."""
        s = self.sessions.get(sid)
        return s is not None and dir_ident(s.path) != self.idents.get(sid)

    # --- use ---------------------------------------------------------------------------------
    @contextmanager
    def pin(self, sid: str) -> Iterator[None]:
        self.pins[sid] = self.pins.get(sid, 0) + 1
        try:
            yield
        finally:
            n = self.pins[sid] - 1
            if n:
                self.pins[sid] = n
            else:
                del self.pins[sid]

    def lock(self, sid: str) -> _Hold:
        return _Hold(self, sid)

    def in_use(self, sid: str) -> bool:
        return sid in self.pins or sid in self.locks

    # --- deletions ---------------------------------------------------------------------------
    def bury(self, sid: str, ident: tuple[int, int] | None) -> None:
        self.deleted[sid] = ident
        self.deleted.move_to_end(sid)
        while len(self.deleted) > MAX_TOMBSTONES:
            self.deleted.popitem(last=False)

    def bury_loaded(self, sid: str) -> None:
        """A tombstone for a loaded session, with the identity its directory had when loaded."""
        self.bury(sid, self.idents.get(sid))

    def unbury(self, sid: str) -> None:
        """The session exists again (created after a deletion, or a reset of our own finished)."""
        self.deleted.pop(sid, None)

    def is_buried(self, sid: str) -> bool:
        return sid in self.deleted

    def count_eviction(self, reason: str) -> None:
        self.evictions[reason] += 1

    def buried(self, sid: str, path: str) -> bool:
        """A tombstone that still holds: the directory is still gone (not created again since)."""
        if sid not in self.deleted:
            return False
        now = dir_ident(path)
        if now is not None and now != self.deleted[sid]:
            del self.deleted[sid]  # a new session under that id
            return False
        return True

    def sizes(self) -> dict[str, int]:
        return {"sessions": len(self.sessions), "locks": len(self.locks), "pins": len(self.pins),
                "tombstones": len(self.deleted)}
