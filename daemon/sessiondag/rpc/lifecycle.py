"""The daemon's lifecycle (a mixin of rpc/daemon.py's Daemon): start its background tasks (watchers,
the eviction sweeper, the idle watch), stop on request, and shut down in order — finish in-flight
requests, stop sub-agents (finalized `cancelled`), commit open turns, stop the watchers, close the
connections, cancel what is left."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import anyio

log = logging.getLogger("sessiondag.daemon")


class Lifecycle:
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
        self.spawn(self.disk.run())
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
        conns = list(self.connections)
        # running turns would keep their prompts in flight for as long as the model talks: they are
        # cancelled like a user would (committed `cancelled`; the prompting client is answered
        # stop_reason "cancelled", subscribers get agent/did_update `daemon_stopping` first)
        for sid in self.agents.cancel_running():
            log.warning("stopping: cancelled the running turn of %s", sid)
            self.notifier.broadcast(sid, "agent/did_update", {"kind": "daemon_stopping", "session_id": sid})
        if not await self.agents.turns_ended():
            log.warning("stopping: turns still running after the cancel: %s", ", ".join(self.agents.running_turns()))
        await asyncio.gather(*(c.wait_idle() for c in conns), return_exceptions=True)
        await self.agents.stop()
        await self.commit_open_turns()
        self.binding.close()
        self.disk.close()
        for c in conns:
            await c.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
