"""When the daemon closes loaded sessions: after an idle time, beyond `max_open` (least recently used
first), and before the fd limit is reached (a reserve of fds stays free, so a new client can always
connect and ping).

A session is evictable when nothing uses it: no subscriber, no request in a worker thread on it (a
pin), nobody holding or waiting for its async lock (writes, agent turns), no queued write, no turn or
sub-agent running, no workspace changes waiting for its next turn. An open (uncommitted) turn does not
keep a session loaded: its records are in the journal and a reload restores them. Evicting closes
the session's fds (store `release`), drops its listener, binding and render cache; the next request
loads it again, transparently.
"""

from __future__ import annotations

import logging
import time

import anyio
from collections.abc import Callable

from .fd_budget import default_reserve, fd_limit, fds_open
from .session_table import SessionTable

log = logging.getLogger("sessiondag.eviction")

DEFAULT_MAX_OPEN = 512
DEFAULT_IDLE = 600.0


class Evictor:
    """Chooses and closes loaded sessions. It reads the table (LRU order, pins, locks, tombstones) and
    asks `busy()` which sessions something outside the table uses (turns, queued writes, changes held
    for a turn) and `subscribed(sid)`; `close(sid, reason)` closes one (the service's `drop`)."""

    def __init__(self, table: SessionTable, *, busy: Callable[[], set[str]], subscribed: Callable[[str], bool],
                 close: Callable[[str, str], None], max_open: int | None = None, idle_after: float | None = None,
                 reserve: int | None = None):
        self.table, self.busy, self.subscribed, self.close = table, busy, subscribed, close
        self.max_open = max(1, max_open if max_open is not None else DEFAULT_MAX_OPEN)
        self.idle_after = DEFAULT_IDLE if idle_after is None else (idle_after if idle_after > 0 else None)
        self._reserve = reserve

    @property
    def reserve(self) -> int:
        return self._reserve if self._reserve is not None else default_reserve(fd_limit())

    def limits(self) -> dict[str, object]:
        return {"max_open_sessions": self.max_open, "session_idle_timeout": self.idle_after,
                "fd_limit": fd_limit(), "fd_reserve": self.reserve}

    # --- who may go --------------------------------------------------------------------------
    def evictable(self, sid: str, busy: set[str], subscribed_too: bool = False) -> bool:
        return not ((not subscribed_too and self.subscribed(sid)) or self.table.in_use(sid) or sid in busy)

    def _candidates(self, keep: str | None, subscribed_too: bool = False) -> list[str]:
        busy = self.busy()
        return [sid for sid in self.table.lru() if sid != keep and self.evictable(sid, busy, subscribed_too)]

    # --- policies ----------------------------------------------------------------------------
    def headroom(self) -> int:
        return fd_limit() - self.reserve - fds_open()

    def enforce(self, keep: str | None = None, want_fds: int = 0) -> None:
        """Evict until at most `max_open` sessions are loaded and `want_fds` fds are free above
        the reserve. `keep` (the session just loaded) is never chosen."""
        table = self.table
        if len(table.sessions) > self.max_open:
            for sid in self._candidates(keep)[: len(table.sessions) - self.max_open]:
                self.close(sid, "lru")
        free = self.headroom()
        while free < want_fds:
            # subscribed sessions only as a last resort: their dirs stay watched, and a change
            # loads them again (subscribers get a `reload` change)
            cands = self._candidates(keep) or self._candidates(keep, subscribed_too=True)
            if not cands:
                log.warning("fd headroom %d below %d and no idle session to close", free, want_fds)
                return
            for sid in cands[: max(4, len(cands) // 8)]:  # a batch per fd count
                self.close(sid, "fds")
            free = self.headroom()

    def sweep(self, now: float | None = None) -> None:
        """Close sessions idle for longer than `idle_after`, and deleted ones nothing uses any more."""
        table = self.table
        for sid in [s for s in table.lru() if table.is_buried(s) and not table.in_use(s)]:
            self.close(sid, "deleted")
        if self.idle_after is None:
            return
        now = time.monotonic() if now is None else now
        for sid in self._candidates(None):
            if table.idle_for(sid, now) < self.idle_after:
                break  # LRU order: the rest were used more recently
            self.close(sid, "idle")

    async def run(self) -> None:
        """Sweep every `tick()` seconds, for as long as the daemon runs."""
        while True:
            await anyio.sleep(self.tick())
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - the sweeper must keep running
                log.exception("evicting idle sessions failed")

    def tick(self) -> float:
        return 1.0 if self.idle_after is None else min(1.0, max(0.05, self.idle_after / 4))
