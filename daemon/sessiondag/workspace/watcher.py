"""A watchfiles watcher over a path set that changes: restart it when the set changes.

watchfiles fixes the watched paths when a watcher starts and raises if one is missing, so the path
set is recomputed (keeping only directories that exist) on every (re)start.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Awaitable, Callable, Iterable

import anyio
from watchfiles import awatch

log = logging.getLogger("sessiondag.watch")
Changes = set[tuple[Any, str]]


class RestartableWatch:
    def __init__(self, name: str, paths: Callable[[], Iterable[str]],
                 on_changes: Callable[[Changes], Awaitable[None]], *, recursive: bool,
                 watch_filter: Callable[[Any, str], bool] | None = None, step: int = 20,
                 debounce: int = 400):
        self.name = name
        self.paths = paths
        self.on_changes = on_changes
        self.recursive = recursive
        self.watch_filter = watch_filter
        self.step = step
        self.debounce = debounce
        self._restart: anyio.Event | None = None
        self._closed = False
        self.watching: list[str] = []

    def restart(self) -> None:
        if self._restart is not None:
            self._restart.set()

    def close(self) -> None:
        self._closed = True
        self.restart()

    async def run(self) -> None:
        while not self._closed:
            self._restart = anyio.Event()
            self.watching = sorted({p for p in self.paths() if os.path.isdir(p)})
            if not self.watching:
                await self._restart.wait()
                continue
            try:
                async for changes in awatch(*self.watching, recursive=self.recursive,
                                            watch_filter=self.watch_filter, stop_event=self._restart,
                                            step=self.step, debounce=self.debounce):
                    try:
                        await self.on_changes(changes)
                    except Exception:  # noqa: BLE001 - a bad batch must not stop the watcher
                        log.exception("%s watcher callback failed", self.name)
            except FileNotFoundError:
                continue  # a path vanished between the check and the start: recompute
            except Exception:  # noqa: BLE001
                log.exception("%s watcher failed; restarting", self.name)
                await anyio.sleep(0.2)
