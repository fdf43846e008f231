"""The daemon's write queue: group commit of the writes clients send to one session.

A write waits in its session's queue; one drainer task per session takes everything queued, runs it
in one worker thread hop under the session's async lock, the session lock and `Session.batched()`
(one fdatasync for the batch), and answers each write only once the batch is durable. A burst of N
writes pays one thread hop and one fdatasync. If the batch's fdatasync fails, none of its writes is
acknowledged (each gets the typed storage error). A write to a session whose directory vanished
under it acknowledges nothing (`session_deleted`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

from ..core.errors import SessionDeletedError, storage_error_from
from ..store.session import Session
from .session_table import SessionTable

T = TypeVar("T")


class _Pending:
    """One queued write and its answer (set once; a writer that gave up is settled unanswered)."""

    __slots__ = ("fn", "answered", "settled", "ok", "value")

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn
        self.answered = anyio.Event()
        self.settled = False
        self.ok = False
        self.value: Any = None

    def answer(self, ok: bool, value: Any) -> None:
        if not self.settled:
            self.settled, self.ok, self.value = True, ok, value
            self.answered.set()


class WriteQueue:
    """Writes queued per session. It uses the table (pins, tombstones, the session's async lock), the
    daemon's task spawner and worker limiter, and `on_deleted(sid, detail)` for a session whose
    directory vanished under a write."""

    def __init__(self, table: SessionTable, spawn: Callable[[Coroutine[Any, Any, Any]], Any],
                 limiter: anyio.CapacityLimiter, on_deleted: Callable[[str, str], Awaitable[None]]):
        self.table, self.spawn, self.limiter, self.on_deleted = table, spawn, limiter, on_deleted
        self.queues: dict[str, list[_Pending]] = {}
        self.writers: set[str] = set()          # sessions with a drainer running

    async def submit(self, session: Session, fn: Callable[[], T]) -> T:
        """Run `fn()` (a write on `session`) with the writes queued behind it; its result or error."""
        p = _Pending(fn)
        self.queues.setdefault(session.id, []).append(p)
        if session.id not in self.writers:
            self.writers.add(session.id)
            self.spawn(self._drain(session))
        with self.table.pin(session.id):
            try:
                await p.answered.wait()
            except BaseException:
                p.settled = True  # cancelled: not run if its batch has not started
                raise
        if p.ok:
            value: T = p.value
            return value
        raise p.value

    def busy(self, sid: str) -> bool:
        return sid in self.writers or bool(self.queues.get(sid))

    def busy_sessions(self) -> set[str]:
        return self.writers | {sid for sid, q in self.queues.items() if q}

    async def _drain(self, session: Session) -> None:
        sid = session.id
        try:
            while True:
                batch = [p for p in self.queues.pop(sid, []) if not p.settled]
                if not batch:
                    return
                results = await self._run_batch(session, [p.fn for p in batch])
                if any(isinstance(v, SessionDeletedError) for ok, v in results if not ok):
                    await self.on_deleted(sid, "the session directory vanished")
                for p, (ok, value) in zip(batch, results):
                    p.answer(ok, value)
        finally:
            self.writers.discard(sid)
            if self.queues.get(sid):  # raced in while we were leaving
                self.writers.add(sid)
                self.spawn(self._drain(session))

    async def _run_batch(self, session: Session, fns: list[Callable[[], Any]]) -> list[tuple[bool, Any]]:
        sid = session.id

        def run_all() -> list[tuple[bool, Any]]:
            out: list[tuple[bool, Any]] = []
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
        async with self.table.lock(sid):
            if self.table.buried(sid, session.path):
                return [(False, SessionDeletedError(sid))] * len(fns)
            try:
                return await anyio.to_thread.run_sync(run_all, limiter=self.limiter)
            except Exception as e:  # noqa: BLE001 - the batch's fdatasync failed: none is durable
                err = storage_error_from(e, "append") if isinstance(e, OSError) else e
                return [(False, err)] * len(fns)
