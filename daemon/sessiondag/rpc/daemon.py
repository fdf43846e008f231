"""The daemon (one per `sessiondag serve`; two in one process share nothing): the composition root of
the server side. It owns

- `service` (service.py): the sessions and everything kept per session — the one API handlers call;
- `lifecycle` (lifecycle.py): background tasks, the stop request, the idle watch;
- the connections (connection.py: each calls `attach` / `detach`), the transports it serves, and the
  figures of `daemon/status`.

Shutdown runs here because it spans them: finish in-flight requests, stop sub-agents (finalized
`cancelled`), commit open turns, stop the watchers, close the connections, cancel what is left.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Coroutine
from typing import TypeVar

import anyio

from .. import __version__
from ..context.cache import cache_count
from ..store.handles import SessionStore
from . import codec
from .channel import DaemonClient
from .fd_budget import fds_open
from .lifecycle import Lifecycle
from .service import SessionService

T = TypeVar("T")

log = logging.getLogger("sessiondag.daemon")

SHUTDOWN_GRACE = 5.0   # seconds a big frame still being written gets once the daemon stops (rpc/outbox.py)


class Daemon:
    def __init__(self, store: SessionStore, *, max_threads: int = 8, max_frame: int = codec.MAX_FRAME,
                 idle_timeout: float | None = None, max_open_sessions: int | None = None,
                 session_idle_timeout: float | None = None, fd_reserve: int | None = None):
        self.store = store
        self.max_frame = max_frame
        self.transports: list[str] = []
        self.socket_path: str | None = None
        self.log_path: str | None = None
        self.started_at = time.time()
        self.last_activity = time.monotonic()
        self.lifecycle = Lifecycle(idle_timeout=idle_timeout, idle_for=self._idle_for)
        self.service = SessionService(store, self, max_threads=max_threads, max_open_sessions=max_open_sessions,
                                      session_idle_timeout=session_idle_timeout, fd_reserve=fd_reserve)
        self.connections = self.service.connections

    # --- lifecycle ---------------------------------------------------------------------------
    async def start(self) -> None:
        await self.lifecycle.start(self.service.started())

    def spawn(self, coro: Coroutine[object, None, T]) -> asyncio.Task[T]:
        return self.lifecycle.spawn(coro)

    def stop(self, reason: str = "stop") -> None:
        """Stop (serve.py waits for it, then calls `shutdown`); `reason` goes out in daemon/will_stop."""
        self.lifecycle.stop(reason)

    async def wait_stopped(self) -> None:
        await self.lifecycle.wait_stopped()

    def _idle_for(self) -> float | None:
        return None if self.connections else time.monotonic() - self.last_activity

    async def shutdown(self) -> None:
        """Finish in-flight requests, stop sub-agents (finalized `cancelled`), commit open turns,
        stop the watchers, close the connections."""
        conns = list(self.connections)
        svc = self.service
        # running turns would keep their prompts in flight for as long as the model talks: they are
        # cancelled like a user would (committed `cancelled`; the prompting client is answered
        # stop_reason "cancelled", subscribers get agent/did_update `daemon_stopping` first)
        cancelled = svc.agents.cancel_running()
        for sid in cancelled:
            log.warning("stopping: cancelled the running turn of %s", sid)
            svc.broadcast(sid, "agent/did_update", {"kind": "daemon_stopping", "session_id": sid})
        # every client, subscribed or not, learns it before its transport closes (a client that only
        # prompts, or only lists sessions, would otherwise see a bare EOF, like a crash)
        will_stop: dict[str, object] = {"jsonrpc": "2.0", "method": "daemon/will_stop",
                                         "params": {"reason": self.lifecycle.stop_reason,
                                                    "cancelled_sessions": cancelled}}
        for c in conns:
            c.send(will_stop)
        if not await svc.agents.turns_ended():
            log.warning("stopping: turns still running after the cancel: %s", ", ".join(svc.agents.running_turns()))
        async with anyio.create_task_group() as tg:   # wait_idle never raises: it gathers its requests
            for c in conns:
                tg.start_soon(c.wait_idle)
        await svc.agents.stop()
        await svc.commit_open_turns()
        svc.close_watchers()
        async with anyio.create_task_group() as tg:   # at once: a client that stopped reading holds no other
            for c in conns:
                tg.start_soon(c.close, SHUTDOWN_GRACE)
        await self.lifecycle.cancel_all()

    # --- connections -------------------------------------------------------------------------
    def attach(self, conn: DaemonClient) -> None:
        self.last_activity = time.monotonic()
        self.service.attach(conn)

    def detach(self, conn: DaemonClient) -> None:
        self.service.detach(conn)
        self.last_activity = time.monotonic()

    # --- status ------------------------------------------------------------------------------
    def tables(self) -> dict[str, int]:
        """Sizes of everything kept per session or per client (bounded: tests watch these)."""
        return {**self.service.tables(), "store_loaded": self.store.loaded(), "render_caches": cache_count(),
                "connections": len(self.connections), "tasks": self.lifecycle.task_count()}

    def status(self) -> dict[str, object]:
        """`daemon/status`."""
        return {
            **self.service.figures(), "fds_open": fds_open(), "tables": self.tables(),
            "version": __version__, "pid": os.getpid(), "state_dir": self.store.state_dir,
            "uptime_s": round(time.time() - self.started_at, 3), "transports": list(self.transports),
            "clients": [{"client_id": c.id, "transport": c.transport, "client_info": c.client_info,
                         "subscriptions": sorted(c.subscriptions), "in_flight": len(c.tasks)}
                        for c in sorted(self.connections, key=lambda c: c.id)],
            "socket": self.socket_path, "log_path": self.log_path,
        }
