"""An adapter's own worker thread: its async methods run their store calls there, in order, off the
caller's event loop.

`asyncio.to_thread` hands each call to the loop's default executor (a concurrent future chained to
an asyncio one, the pool's queue, a context copy): ~75 µs a call on this kind of machine, against
~40 µs for a thread of its own waiting on a condition — a durable add_items is ~30 µs of work plus
its fdatasync. The thread starts with the first call and ends after IDLE seconds without one (an
unused adapter holds no thread); it is a daemon thread, so an idle one never delays the
interpreter's exit. Calls run one at a time in the order they were made (a pop after an add sees the
item). A call whose caller was cancelled still runs to its end, as with `asyncio.to_thread`.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Callable, TypeVar, TypeVarTuple, cast

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
IDLE = 5.0  # seconds without a call before the thread ends


class Worker:
    def __init__(self, name: str = "sessiondag-adapter"):
        self.name = name
        # (fn, its args, the future of its result, the caller's loop): each call's own types, checked by run
        self._calls: deque[tuple[Callable[..., object], tuple[object, ...], asyncio.Future[object],
                                 asyncio.AbstractEventLoop]] = deque()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        """Is the thread running (busy, or waiting for the next call)?"""
        with self._cv:
            return self._thread is not None

    async def run(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """`fn(*args)` in the worker thread; its result or its exception."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        with self._cv:
            self._calls.append((fn, args, cast("asyncio.Future[object]", fut), loop))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
            else:
                self._cv.notify()
        return await fut

    def _serve(self) -> None:
        while True:
            with self._cv:
                if not self._calls:
                    self._cv.wait(IDLE)
                    if not self._calls:
                        self._thread = None
                        return
                fn, args, fut, loop = self._calls.popleft()
            try:
                ok, value = True, fn(*args)
            except BaseException as e:  # noqa: BLE001 - the caller gets it, the thread goes on
                ok, value = False, e
            try:
                loop.call_soon_threadsafe(_settle, fut, ok, value)
            except RuntimeError:  # the caller's loop was closed meanwhile: nobody waits
                pass


def _settle(fut: asyncio.Future[object], ok: bool, value: object) -> None:
    if fut.cancelled():
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(cast(BaseException, value))   # _serve: not ok, the exception raised
