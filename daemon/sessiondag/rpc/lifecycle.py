"""One daemon's lifecycle (`Daemon.lifecycle`): its background tasks, the stop request and the idle
watch. The daemon (rpc/daemon.py) starts it with the tasks to run and, on stop, shuts down in order —
finish in-flight requests, stop sub-agents (finalized `cancelled`), commit open turns, stop the
watchers, close the connections — then cancels what is left here.

Tasks are asyncio tasks, not an anyio task group: they are started from plain callbacks on the loop
(store listeners handed over by `call_soon_threadsafe`, the notifier's drain) that no `async with`
scope encloses, and they outlive the request that started them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TypeVar

import anyio

T = TypeVar("T")

log = logging.getLogger("sessiondag.daemon")


class Lifecycle:
    def __init__(self, *, idle_timeout: float | None, idle_for: Callable[[], float | None]):
        self.idle_timeout = idle_timeout
        self.idle_for = idle_for          # seconds without clients or activity (None: a client is there)
        self._tasks: set[asyncio.Task[object]] = set()
        self._stop: anyio.Event | None = None
        self.stop_reason = "stop"         # why it stops (daemon/will_stop): stop, signal, idle, stdio_closed

    def spawn(self, coro: Coroutine[object, None, T]) -> asyncio.Task[T]:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    def task_count(self) -> int:
        return len(self._tasks)

    async def start(self, background: list[Callable[[], Coroutine[object, None, None]]]) -> None:
        self._stop = anyio.Event()
        for run in background:
            self.spawn(run())
        if self.idle_timeout:
            self.spawn(self._idle_watch(self.idle_timeout))

    def stop(self, reason: str = "stop") -> None:
        if self._stop is not None:
            if not self._stop.is_set():
                self.stop_reason = reason
            self._stop.set()

    async def wait_stopped(self) -> None:
        assert self._stop is not None, "start() first"
        await self._stop.wait()

    async def _idle_watch(self, timeout: float) -> None:
        tick = min(1.0, timeout / 4)
        while True:
            await anyio.sleep(tick)
            idle = self.idle_for()
            if idle is not None and idle >= timeout:
                log.info("idle for %.1fs with no clients: stopping", timeout)
                self.stop("idle")
                return

    async def cancel_all(self) -> None:
        """The last step of a shutdown: cancel every task still running and wait for them."""
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
