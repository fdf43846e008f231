"""The threads that run the write queue's batches (rpc/write_queue.py): a cheaper hop than
`anyio.to_thread.run_sync` for the one call the daemon makes most.

A batch is put on one queue that the threads take from (a thread is started when more batches wait
than threads are idle; one idle for IDLE_EXIT seconds ends); its result comes back through `loop.call_soon_threadsafe` onto a bare future the
loop awaits inside a shielded cancel scope (a batch, once started, is waited for: its answers wait
for its fdatasync). No checkpoint, no limiter task, no context copy: ~15 µs of CPU per hop against
~50–80 µs for anyio's (measured one hop after the other on this machine). The threads take one of
the daemon's limiter tokens per batch without waiting (`acquire_on_behalf_of_nowait`), so `--threads`
still bounds the store's worker threads; when every token is out, the batch goes through anyio's
`to_thread`, which waits for one.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Callable, TypeVar

import anyio

T = TypeVar("T")
IDLE_EXIT = 10.0   # seconds a thread waits for a batch before it ends (as anyio's workers do)


def _done(fut: asyncio.Future[T], value: T) -> None:
    if not fut.done():
        fut.set_result(value)


def _failed(fut: asyncio.Future[T], error: BaseException) -> None:
    if not fut.done():
        fut.set_exception(error)


def _job(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[T], fn: Callable[[], T]) -> Callable[[], None]:
    """`fn` as a thread's job: its result or error handed to `fut` on `loop`."""
    def job() -> None:
        try:
            try:
                value = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
                loop.call_soon_threadsafe(_failed, fut, e)
            else:
                loop.call_soon_threadsafe(_done, fut, value)
        except RuntimeError:  # the loop is closed: nobody waits
            pass
    return job


class WriteThreads:
    def __init__(self, limiter: anyio.CapacityLimiter, name: str = "sessiondag-write"):
        self.limiter = limiter
        self.name = name
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0     # running
        self._idle = 0        # of them, waiting for a batch
        self._waiting = 0     # batches put and not yet taken
        self.peak = 0         # the most threads running at once (tests)

    async def run(self, fn: Callable[[], T]) -> T:
        """`fn()` in one of the threads; its result or error."""
        token = object()
        try:
            self.limiter.acquire_on_behalf_of_nowait(token)
        except anyio.WouldBlock:
            return await anyio.to_thread.run_sync(fn, limiter=self.limiter)
        try:
            loop = asyncio.get_running_loop()
            fut: asyncio.Future[T] = loop.create_future()
            with self._lock:
                self._waiting += 1
                if self._waiting > self._idle:
                    self._threads += 1
                    self.peak = max(self.peak, self._threads)
                    threading.Thread(target=self._work, name=self.name, daemon=True).start()
            self._queue.put(_job(loop, fut, fn))
            with anyio.CancelScope(shield=True):  # started: waited for (its answers wait for its fdatasync)
                value = await fut
            return value
        finally:
            self.limiter.release_on_behalf_of(token)

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            try:
                job = self._queue.get(timeout=IDLE_EXIT)
            except queue.Empty:
                with self._lock:
                    self._idle -= 1
                    if self._waiting <= self._idle:  # no batch is counting on this thread
                        self._threads -= 1
                        return
                continue
            with self._lock:
                self._idle -= 1
                self._waiting -= 1
            job()
            del job  # an idle thread keeps nothing alive (the batch's session, its results, the future)
