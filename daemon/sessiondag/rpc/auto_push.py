"""Automatic push after each turn commit: to the remote of the session's auto-push rule, else its
working dir's, else the setting `sync.auto_push` (sync/remotes.py `auto_push_for`; off by default).

A store listener (any thread, under the session lock) sees `TurnCommitted` and hands the session id
to the event loop; the push itself runs in a worker thread (sync/push.py), never under the session
lock and never in a turn's way: a turn commits and goes on while its push runs. Pushes of one
session are coalesced (a commit during a push makes one more push after it). Each outcome is kept
for `daemon/status` (`auto_push.last` / `auto_push.failures`) and announced to the session's
subscribers as a `session/did_change` change `{kind: "sync", status, remote, commit?, error?}`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import ParamSpec, Protocol, TypeVar

from ..core.errors import SessionDagError
from ..store.events import Event, TurnCommitted
from ..store.handles import SessionStore
from ..store.session import Session
from ..sync import push, remotes

log = logging.getLogger("sessiondag.daemon")

T = TypeVar("T")
P = ParamSpec("P")


class Blocking(Protocol):
    """The service's `blocking`: `fn(*args, **kwargs)` in a worker thread."""

    def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Awaitable[T]: ...


class AutoPush:
    """Uses the store (settings, paths), the daemon's task spawner and event loop, worker threads
    (`blocking`), the loaded sessions (`loaded`) and `broadcast` to the session's subscribers."""

    def __init__(self, store: SessionStore, spawn: Callable[[Coroutine[object, None, None]], object],
                 loop: Callable[[], asyncio.AbstractEventLoop | None], blocking: Blocking,
                 loaded: Callable[[str], Session | None], broadcast: Callable[[str, str, dict[str, object]], None]):
        self.store, self.spawn, self.loop, self.blocking = store, spawn, loop, blocking
        self.loaded, self.broadcast = loaded, broadcast
        self.running: set[str] = set()
        self.again: set[str] = set()
        self.last: dict[str, dict[str, object]] = {}
        self.failures: dict[str, dict[str, object]] = {}

    def remote(self) -> str | None:
        try:
            return self.store.settings().auto_push
        except Exception:  # a bad setting is reported by the commands that read it; no push
            return None

    def remote_for(self, sid: str, working_dir: str | None) -> str | None:
        """The remote `sid` is pushed to: its rule, its working dir's, else the setting."""
        return remotes.auto_push_for(self.store.state_dir, sid, working_dir, self.remote())

    def listener(self, session: Session, events: list[Event]) -> None:
        if not any(isinstance(e, TurnCommitted) for e in events) or \
                self.remote_for(session.id, session.info.get("working_dir")) is None:
            return
        loop = self.loop()
        try:
            if loop is not None:
                loop.call_soon_threadsafe(self.schedule, session.id)
        except RuntimeError:  # loop closed during shutdown
            pass

    def schedule(self, sid: str) -> None:
        if sid in self.running:
            self.again.add(sid)
            return
        self.running.add(sid)
        self.spawn(self._run(sid))

    async def _run(self, sid: str) -> None:
        try:
            while True:
                self.again.discard(sid)
                await self._push_once(sid)
                if sid not in self.again:
                    return
        finally:
            self.running.discard(sid)

    async def _push_once(self, sid: str) -> None:
        s = self.loaded(sid)
        name = self.remote_for(sid, s.info.get("working_dir") if s is not None else None)
        if name is None:
            return
        change: dict[str, object] = {"kind": "sync", "remote": name}
        try:
            r = remotes.resolve(self.store.state_dir, name)
            res = await self.blocking(push.push, self.store, r, sid, self.store.settings())
            self.last[sid] = {"status": res["status"], "commit": res["commit"], "remote": name, "at": time.time()}
            self.failures.pop(sid, None)
            change.update(status=res["status"], commit=res["commit"])
        except SessionDagError as e:
            err = {"code": e.code, "message": str(e), "data": e.data()}
            self.failures[sid] = {**err, "at": time.time()}
            change.update(status="failed", error=err)
            log.warning("auto-push of %s to %s failed: %s: %s", sid, name, e.code, e)
        except Exception as e:  # never takes the daemon down: reported like a typed failure
            err = {"code": "internal_error", "message": f"{type(e).__name__}: {e}", "data": {}}
            self.failures[sid] = {**err, "at": time.time()}
            change.update(status="failed", error=err)
            log.exception("auto-push of %s failed", sid)
        g = self.loaded(sid)
        head = g.loaded_graph.head_id if g is not None and g.loaded_graph is not None else None
        self.broadcast(sid, "session/did_change", {"session_id": sid, "head_id": head, "changes": [change]})

    def status(self) -> dict[str, object]:
        return {"remote": self.remote(), "last": dict(self.last), "failures": dict(self.failures)}
