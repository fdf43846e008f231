"""The daemon's write queue: group commit of the writes clients send to one session.

A write waits in its session's queue; one drainer task per session takes everything queued, runs it
in one worker thread hop under the session's async lock, the session lock and `Session.batched()`
(one fdatasync for the batch), and answers each write only once the batch is durable. A burst of N
writes pays one thread hop and one fdatasync. If the batch's fdatasync fails, none of its writes is
acknowledged (each gets the typed storage error). A write to a session whose directory vanished
under it acknowledges nothing (`session_deleted`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import anyio

from ..core.errors import SessionDeletedError, storage_error_from


class WriteQueue:
    def __init__(self, daemon: Any):
        self.d = daemon  # table, loop, limiter, spawn, session_lock, session_deleted
        self.queues: dict[str, list[tuple[Callable[[], Any], asyncio.Future]]] = {}
        self.writers: set[str] = set()          # sessions with a drainer running

    async def submit(self, session: Any, fn: Callable[[], Any]) -> Any:
        """Run `fn()` (a write on `session`) with the writes queued behind it; its result or error."""
        fut = self.d.loop.create_future()
        q = self.queues.setdefault(session.id, [])
        q.append((fn, fut))
        if session.id not in self.writers:
            self.writers.add(session.id)
            self.d.spawn(self._drain(session))
        with self.d.table.pin(session.id):
            return await fut

    def busy(self, sid: str) -> bool:
        return sid in self.writers or bool(self.queues.get(sid))

    async def _drain(self, session: Any) -> None:
        sid = session.id
        try:
            while True:
                batch = [(fn, fut) for fn, fut in self.queues.pop(sid, []) if not fut.done()]
                if not batch:
                    return
                results = await self._run_batch(session, [fn for fn, _ in batch])
                if any(isinstance(v, SessionDeletedError) for ok, v in results if not ok):
                    await self.d.session_deleted(sid, "the session directory vanished")
                for (_, fut), (ok, value) in zip(batch, results):
                    if not fut.done():
                        fut.set_result(value) if ok else fut.set_exception(value)
        finally:
            self.writers.discard(sid)
            if self.queues.get(sid):  # raced in while we were leaving
                self.writers.add(sid)
                self.d.spawn(self._drain(session))

    async def _run_batch(self, session: Any, fns: list[Callable[[], Any]]) -> list[tuple[bool, Any]]:
        sid = session.id

        def run_all() -> list[tuple[bool, Any]]:
            out = []
            with session.lock:
                with session.batched():  # one fdatasync for the batch, before any answer
                    for fn in fns:
                        try:
                            out.append((True, fn()))
                        except Exception as e:  # noqa: BLE001 - each write gets its own answer
                            out.append((False, e))
                # acknowledged must mean present: a journal deleted under us acks nothing
                if any(ok for ok, _ in out) and not session.on_disk():
                    gone = SessionDeletedError(sid, "the session directory vanished during the write")
                    out = [(False, gone if ok else v) for ok, v in out]
            return out
        async with self.d.session_lock(sid):
            if self.d.table.buried(sid, session.path):
                return [(False, SessionDeletedError(sid))] * len(fns)
            try:
                return await anyio.to_thread.run_sync(run_all, limiter=self.d.limiter)
            except Exception as e:  # noqa: BLE001 - the batch's fdatasync failed: none is durable
                err = storage_error_from(e, "append") if isinstance(e, OSError) else e
                return [(False, err)] * len(fns)
