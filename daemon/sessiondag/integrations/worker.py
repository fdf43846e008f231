"""An adapter's own worker thread: its async methods run their store calls there, in order, off the
caller's event loop.

`asyncio.to_thread` hands each call to the loop's default executor (a concurrent future chained to
an asyncio one, the pool's queue, a context copy): ~75 µs a call on this kind of machine. Here a
call is one `SimpleQueue.put` (C, one lock) that wakes the thread blocked in `get`, and one
`call_soon_threadsafe` back; the caller's side is one plain function returning the future to
await (no coroutine frame of its own). The thread starts with the first call and ends after IDLE
seconds without one (an unused adapter holds no thread); it is a daemon thread, so an idle one
never delays the interpreter's exit. Calls run one at a time in the order they were made (a pop
after an add sees the item). A call whose caller was cancelled still runs to its end, as with
`asyncio.to_thread`.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Callable, TypeVar, TypeVarTuple, cast

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
IDLE = 5.0  # seconds without a call before the thread ends

# (fn, its args, the future of its result, the caller's loop): each call's own types, checked by submit
_Call = tuple[Callable[..., object], tuple[object, ...], "asyncio.Future[object]", asyncio.AbstractEventLoop]


class Worker:
    def __init__(self, name: str = "sessiondag-adapter"):
        self.name = name
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        # held while a call is queued and the thread checked, and while the idle thread decides to
        # end: a call is never left in the queue with no thread to run it
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        """Is the thread running (busy, or waiting for the next call)?"""
        with self._lock:
            return self._thread is not None

    def submit(self, fn: Callable[[*Ts], T], *args: *Ts) -> "asyncio.Future[T]":
        """Queue `fn(*args)` for the worker thread; the future (of the running loop) of its result
        or its exception. Call it from a coroutine and await what it returns."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._calls.put((fn, args, cast("asyncio.Future[object]", fut), loop))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
        return fut

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """`fn(*args)` in the worker thread; its result or its exception."""
        return await self.submit(fn, *args)

    def _serve(self) -> None:
        get = self._calls.get
        while True:
            try:
                fn, args, fut, loop = get(timeout=IDLE)
            except queue.Empty:
                with self._lock:  # no call can be queued while this decides
                    if self._calls.empty():
                        self._thread = None
                        return
                continue
            try:
                ok, value = True, fn(*args)
            except BaseException as e:  # noqa: BLE001 - the caller gets it, the thread goes on
                ok, value = False, e
            try:
                loop.call_soon_threadsafe(_settle, fut, ok, value)
            except RuntimeError:  # the caller's loop was closed meanwhile: nobody waits
                pass
            del fn, args, fut, loop, value  # hold nothing of a finished call while waiting


def _settle(fut: asyncio.Future[object], ok: bool, value: object) -> None:
    if fut.cancelled():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(cast(BaseException, value))   # _serve: not ok, the exception raised
