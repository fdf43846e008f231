"""A watchfiles watcher over a path set that changes: restart it when the set changes.

watchfiles fixes the watched paths when a watcher starts and raises if one is missing, so the path
set is recomputed (keeping only directories that exist) on every (re)start. This drives watchfiles'
Rust watcher directly (as `awatch` does, through the adapter in notify.py) so that `wait_watching`
can tell when a new path set is really being watched: the watch is in place once `Notifier(...)`
returns.
"""

from __future__ import annotations

import logging
import os
from typing import Awaitable, Callable, Iterable

import anyio
from watchfiles import Change

from .notify import Changes, Notifier

log = logging.getLogger("sessiondag.watch")


def _out_of_fds(e: BaseException) -> bool:
    """EMFILE / ENFILE, as an OSError or in the message of the Rust watcher's error."""
    import errno
    if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
        return True
    return "Too many open files" in str(e)


class RestartableWatch:
    def __init__(self, name: str, paths: Callable[[], Iterable[str]],
                 on_changes: Callable[[Changes], Awaitable[None]], *, recursive: bool,
                 watch_filter: Callable[[Change, str], bool] | None = None, step: int = 20,
                 debounce: int = 400, on_watching: Callable[[frozenset[str]], None] | None = None):
        self.name = name
        self.paths = paths
        self.on_changes = on_changes
        self.recursive = recursive
        self.watch_filter = watch_filter
        self.step = step
        self.debounce = debounce
        self.watching: frozenset[str] = frozenset()   # what is really being watched right now
        self.on_watching = on_watching   # told each new watched set (events between two sets are lost)
        self._restart: anyio.Event | None = None
        self._started: anyio.Event | None = None
        self._closed = False

    def restart(self) -> None:
        if self._restart is not None:
            self._restart.set()

    def close(self) -> None:
        self._closed = True
        self.restart()

    async def wait_watching(self, pred: Callable[[frozenset[str]], bool], timeout: float = 5.0) -> bool:
        """Wait until the watched set satisfies `pred` (after a restart); False on timeout."""
        with anyio.move_on_after(timeout):
            while not pred(self.watching):
                if self._started is None:
                    await anyio.sleep(0.01)
                else:
                    await self._started.wait()
            return True
        return False

    def _announce(self, watching: frozenset[str]) -> None:
        self.watching = watching
        if self.on_watching is not None:
            self.on_watching(watching)
        ev, self._started = self._started, anyio.Event()
        if ev is not None:
            ev.set()

    async def run(self) -> None:
        self._started = anyio.Event()
        while not self._closed:
            self._restart = anyio.Event()
            paths = sorted({p for p in self.paths() if os.path.isdir(p)})
            if not paths:
                self._announce(frozenset())
                await self._restart.wait()
                continue
            try:
                watcher = Notifier(paths, recursive=self.recursive)
            except FileNotFoundError:
                continue  # a path vanished between the check and the start: recompute
            except Exception as e:  # noqa: BLE001 - e.g. the inotify watch limit: wait for the next change of the set
                self._announce(frozenset())
                if _out_of_fds(e):  # passing (the daemon evicts sessions under fd pressure): try again soon
                    log.warning("%s watcher cannot start (%s); retrying", self.name, e)
                    with anyio.move_on_after(0.2):
                        await self._restart.wait()
                    continue
                log.exception("%s watcher cannot watch %s; waiting for the path set to change", self.name, paths)
                await self._restart.wait()
                continue
            with watcher:
                self._announce(frozenset(paths))
                await self._loop(watcher)

    async def _loop(self, watcher: Notifier) -> None:
        stop = _Stop(self, self._restart)
        while True:
            changes = await anyio.to_thread.run_sync(
                lambda: watcher.wait(debounce_ms=self.debounce, step_ms=self.step, stop=stop))
            if changes == "stop" or stop.is_set():
                return
            if not isinstance(changes, set):
                continue
            if self.watch_filter is not None:
                changes = {(c, p) for c, p in changes if self.watch_filter(c, p)}
            if changes:
                try:
                    await self.on_changes(changes)
                except Exception:  # noqa: BLE001 - a bad batch must not stop the watcher
                    log.exception("%s watcher callback failed", self.name)


class _Stop:
    """What a blocking wait polls: this watch's restart event, or the watch closed. (`close()`
    must end the wait in its thread whatever event is current: a thread still waiting keeps the
    process from exiting.)"""

    def __init__(self, watch: RestartableWatch, restart: anyio.Event | None):
        self._watch, self._restart = watch, restart

    def is_set(self) -> bool:
        return self._watch._closed or (self._restart is not None and self._restart.is_set())
