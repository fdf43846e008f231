"""The daemon's write queue: group commit of the writes clients send to one session.

A write waits in its session's queue; one drainer task per session takes everything queued, runs it
in one worker thread hop (write_threads.py) under the session's async lock, the session lock and
`Session.batched()` (one fdatasync for the batch), and answers each write only once the batch is
durable. A burst of N
writes pays one thread hop and one fdatasync. If the batch's fdatasync fails, none of its writes is
acknowledged (each gets the typed storage error). A write to a session whose directory vanished
under it acknowledges nothing (`session_deleted`).

A lone write — the caller says it is quick (one record, no blob to store), nothing else is queued or
running for any session, `lone()` says no other request is in flight, and the session's locks are
free and its view caught up (nothing another process wrote to read first) — runs on the event loop
itself, under the session lock: its one record is made durable by its own fdatasync and presence
check (journal.py), as a batch of one's would be, without the group's bookkeeping (`batched()`,
whose two context managers cost ~4.5 µs of CPU per write): the thread hops cost a 1-in-flight client
more than the fdatasync. The loop then waits for that one fdatasync;
anything that has to wait (a lock held by a worker thread or another process, records to read) goes
the queued way, and so does every write while another request is in flight: concurrent writes are
group-committed as before. A request arriving meanwhile waits for the rest of that fdatasync; to bound
that wait on a slow disk, the loop takes lone writes only while the median of the last WINDOW writes
(write + fdatasync, timed on the loop or in a worker alike) is at most LOOP_WRITE_LIMIT: one slow
fdatasync (a busy shared disk has them every few dozen writes) does not send the next writes to the
workers, a disk that stays slow does, and the worker batches' own durations bring the writes back
when it is fast again. (Timed one write on each in turn, an fdatasync takes as long from the loop as
from a worker; the hop is what differs: two thread switches and the loop's wake-up.)
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import TypeVar, cast

import anyio

from ..core.errors import SessionDeletedError, storage_error_from
from ..store.session import Session
from .session_table import SessionTable
from .write_threads import WriteThreads

T = TypeVar("T")
Outcome = tuple[bool, object]  # one write's answer: (True, its result) or (False, the error it raised)
LOOP_WRITE_LIMIT = 0.005   # seconds: while the median of the last WINDOW writes is above this (a slow disk) …
WINDOW = 16                # … lone writes go to the workers


class DiskPace:
    """Which of the last WINDOW writes took longer than LOOP_WRITE_LIMIT; `fast()`: fewer than half
    (their median is within the limit). O(1) per write."""

    __slots__ = ("_slow", "_count")

    def __init__(self) -> None:
        self._slow: deque[bool] = deque(maxlen=WINDOW)
        self._count = 0

    def record(self, took: float) -> None:
        slow = took > LOOP_WRITE_LIMIT
        if len(self._slow) == WINDOW:
            self._count -= self._slow[0]
        self._slow.append(slow)
        self._count += slow

    def fast(self) -> bool:
        return self._count * 2 < WINDOW


class _Pending:
    """One queued write and its answer (set once; a writer that gave up is settled unanswered)."""

    __slots__ = ("fn", "answered", "settled", "ok", "value")

    def __init__(self, fn: Callable[[], object]):
        self.fn = fn
        self.answered = anyio.Event()
        self.settled = False
        self.ok = False
        self.value: object = None

    def answer(self, ok: bool, value: object) -> None:
        if not self.settled:
            self.settled, self.ok, self.value = True, ok, value
            self.answered.set()


class WriteQueue:
    """Writes queued per session. It uses the table (pins, tombstones, the session's async lock), the
    daemon's task spawner and worker limiter, and `on_deleted(sid, detail)` for a session whose
    directory vanished under a write."""

    def __init__(self, table: SessionTable, spawn: Callable[[Coroutine[object, None, None]], object],
                 limiter: anyio.CapacityLimiter, on_deleted: Callable[[str, str], Awaitable[None]],
                 lone: Callable[[], bool] = lambda: False):
        self.table, self.spawn, self.limiter, self.on_deleted = table, spawn, limiter, on_deleted
        self.lone = lone                        # no other request in flight (the daemon's clients)
        self.queues: dict[str, list[_Pending]] = {}
        self.writers: set[str] = set()          # sessions with a drainer running
        self.inline = 0                         # writes run on the loop (tests, benches)
        self.pace = DiskPace()                  # the last writes' durations: may the loop take one?
        self.threads = WriteThreads(limiter)    # where queued batches run (one of the limiter's tokens each)

    async def submit(self, session: Session, fn: Callable[[], T], *, quick: Callable[[], bool] | None = None) -> T:
        """Run `fn()` (a write on `session`) with the writes queued behind it; its result or error.
        `quick()`, asked under the session lock: `fn` writes one record and would store no blob (a
        node too small to spill), so a lone write may run on the loop (see the module doc)."""
        if quick is not None and self.lone():
            done = self.now(session, fn, quick)
            if done is not None:
                if not done[0] and isinstance(done[1], SessionDeletedError):
                    await self.on_deleted(session.id, "the session directory vanished")
                if done[0]:
                    return cast(T, done[1])  # fn's own result, carried as object
                raise _error(done[1])
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
            return cast(T, p.value)  # fn's own result, carried as object
        raise _error(p.value)

    def now(self, session: Session, fn: Callable[[], object], quick: Callable[[], bool]) -> Outcome | None:
        """A lone write run here and now (the caller checked that no other request is in flight):
        its outcome, or None if it would have to wait (nothing done: then it is submitted)."""
        if self.writers or not self.pace.fast():
            return None
        return self._run_inline(session, fn, quick)

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

    def _run_inline(self, session: Session, fn: Callable[[], object], quick: Callable[[], bool]) -> Outcome | None:
        """A lone write as a batch of one, here on the loop (see the module doc); None if it would
        have to wait for anything (then it is queued)."""
        sid = session.id
        if self.queues.get(sid) or sid in self.table.locks or self.table.buried(sid, session.path):
            return None
        journal = session.journal
        if not journal.try_acquire():  # a worker thread or another process holds the session lock
            return None
        try:
            if not journal.in_sync() or not quick():  # records to read first, a blob to store: a worker's
                return None
            self.inline += 1
            done, took = _lone(session, fn)
            self.pace.record(took)
            return done
        finally:
            journal.release()

    async def _run_batch(self, session: Session, fns: list[Callable[[], object]]) -> list[Outcome]:
        sid = session.id
        async with self.table.lock(sid):
            if self.table.buried(sid, session.path):
                return [(False, SessionDeletedError(sid))] * len(fns)
            results, took = await self.threads.run(functools.partial(_settled, session, fns))
            self.pace.record(took)
            return results


def _error(value: object) -> BaseException:
    """A failed write's error as raised (an Outcome's False side always holds one)."""
    return value if isinstance(value, BaseException) else TypeError(f"a write failed with {value!r}")


def _run_all(session: Session, fns: list[Callable[[], object]], took: list[float]) -> list[Outcome]:
    """Run a batch under the session lock with one fdatasync before any answer: (ok, result or error)
    per write; `took` gets the seconds the writes and their fdatasync took (the lock's wait not
    counted). Raises if the batch's fdatasync failed."""
    out: list[Outcome] = []
    with session.lock:
        start = time.monotonic()
        checks = session.journal.presence_checks
        try:
            with session.batched():  # one fdatasync for the batch, before any answer
                for fn in fns:
                    try:
                        out.append((True, fn()))
                    except Exception as e:  # noqa: BLE001 - each write gets its own answer
                        out.append((False, e))
        finally:
            took.append(time.monotonic() - start)
        # acknowledged must mean present: a journal deleted under us acks nothing (the journal checked
        # it after the batch's fdatasync if the batch wrote; a batch that wrote nothing is checked here)
        if any(ok for ok, _ in out) and session.journal.presence_checks == checks and not session.on_disk():
            gone = SessionDeletedError(session.id, "the session directory vanished during the write")
            out = [(False, gone if ok else v) for ok, v in out]
    return out


def _lone(session: Session, fn: Callable[[], object]) -> tuple[Outcome, float]:
    """A lone write of one record, on the loop, the caller holding the session lock: `fn()` alone
    (its record durable and checked present before it returns); its answer and the seconds it took."""
    checks = session.journal.presence_checks
    start = time.monotonic()
    try:
        value = fn()
    except Exception as e:  # noqa: BLE001 - the write's own answer, as in a batch
        return (False, e), time.monotonic() - start
    took = time.monotonic() - start
    if session.journal.presence_checks == checks and not session.on_disk():  # it wrote nothing: check here
        return (False, SessionDeletedError(session.id, "the session directory vanished during the write")), took
    return (True, value), took


def _settled(session: Session, fns: list[Callable[[], object]]) -> tuple[list[Outcome], float]:
    """`_run_all`, a failed fdatasync answering every write of the batch with the typed error; and
    the seconds the batch took."""
    took: list[float] = []
    try:
        return _run_all(session, fns, took), sum(took)
    except Exception as e:  # noqa: BLE001 - the batch's fdatasync failed: none is durable
        err = storage_error_from(e, "append") if isinstance(e, OSError) else e
        return [(False, err)] * len(fns), sum(took)
