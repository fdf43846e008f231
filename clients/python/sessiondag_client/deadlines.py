"""How long a client waits for a daemon before it says the daemon does not respond.

A connection (its handshake) and every answer get `timeout` seconds (DEFAULT_TIMEOUT unless the
caller set another; None: wait forever). A request still unanswered after that is not given up at
once — a turn or a long ping may take minutes — the client then asks `daemon/ping`, which the daemon
answers from its event loop whatever its workers do: answered, it keeps waiting; not answered within
the timeout either, the call raises DaemonNotResponding naming the daemon's pid (a SIGSTOPped,
deadlocked or swapped-out daemon)."""

from __future__ import annotations

import asyncio
import math
from typing import Awaitable, Callable

import anyio

DEFAULT_TIMEOUT = 30.0
PROBE = "daemon/ping"


class DaemonNotResponding(TimeoutError):
    """The daemon (`pid`, None if the transport cannot tell) answered nothing within `timeout` s."""

    def __init__(self, pid: int | None, method: str, timeout: float):
        who = f"the sessiondag daemon (pid {pid})" if pid is not None else "the sessiondag daemon"
        super().__init__(f"{who} did not answer {method} within {timeout:g} s "
                         f"(stopped or stuck? check it with: ps -o stat= -p {pid})" if pid is not None else
                         f"{who} did not answer {method} within {timeout:g} s")
        self.pid = pid
        self.method = method
        self.timeout = timeout


async def wait_answer(event: anyio.Event, timeout: float | None, alive: Callable[[], Awaitable[bool]] | None,
                      pid: int | None, method: str) -> None:
    """Wait for `event` (the answer of `method`); each time `timeout` passes without it, ask
    `alive()` (None: do not probe) and raise DaemonNotResponding unless it says yes."""
    while True:
        with anyio.move_on_after(timeout if timeout is not None else math.inf):
            await event.wait()
            return
        if alive is None or not await alive():
            raise DaemonNotResponding(pid, method, math.inf if timeout is None else timeout)


EXPIRED = object()   # what a timer resolves an answer's future with (answer_due)


def _expire(fut: asyncio.Future[object]) -> None:
    if not fut.done():
        fut.set_result(EXPIRED)


async def answer_due(renew: Callable[[], asyncio.Future[object] | None], timeout: float | None,
                     alive: Callable[[], Awaitable[bool]] | None, pid: int | None, method: str) -> None:
    """`wait_answer` on asyncio, without a cancel scope per call: `renew()` gives the future the
    reader resolves when the answer is in (None: it is in already); a timer resolves it with EXPIRED
    after `timeout`, then `alive()` is asked as in `wait_answer` and a fresh future awaited."""
    while True:
        fut = renew()
        if fut is None:
            return
        timer = None if timeout is None else fut.get_loop().call_later(timeout, _expire, fut)
        try:
            if await fut is not EXPIRED:
                return
        finally:
            if timer is not None:
                timer.cancel()
        if alive is None or not await alive():
            raise DaemonNotResponding(pid, method, math.inf if timeout is None else timeout)


async def send_within(sending: Awaitable[None], timeout: float | None, close: Callable[[], Awaitable[None]],
                      pid: int | None, method: str) -> None:
    """Run `sending` (a frame's send) within `timeout`; a frame cut off by it leaves the stream
    unusable, so the connection is closed (`close`) and DaemonNotResponding raised."""
    try:
        with anyio.fail_after(timeout if timeout is not None else math.inf):
            await sending
    except TimeoutError:
        with anyio.CancelScope(shield=True):
            await close()
        raise DaemonNotResponding(pid, method, math.inf if timeout is None else timeout) from None
