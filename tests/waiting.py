"""The one way a test waits for something it cannot be told about: poll a condition against a deadline.

Tests wait on readiness, never on bare sleeps; where there is nothing to wait on (a file appearing,
/proc/locks, a process gone, updates a recording client collected) they poll with these, so every
wait has a deadline and says what it waited for when it runs out:

    from waiting import wait_until, until
    pid = wait_until(lambda: read_pid(path), "the daemon's pid file")          # the truthy value
    await until(lambda: client.of("agent_message_chunk", sid), "a chunk")     # async (pred may be async)
    await until(task_done, lambda: f"the task; updates so far: {client.updates}")   # message built late

`what` is a string or a callable giving one (evaluated only on a timeout).
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable

import anyio

TIMEOUT = 30.0     # seconds; the per-test timeout (pyproject.toml, pytest-timeout) is well above it
INTERVAL = 0.01


class WaitTimeout(AssertionError):
    """A condition a test waited for did not come true before its deadline."""


def _message(what: str | Callable[[], Any], timeout: float) -> str:
    text = what() if callable(what) else what
    return f"timed out after {timeout:g} s waiting for {text}"


def wait_until(pred: Callable[[], Any], what: str | Callable[[], Any] = "the condition", *,
               timeout: float = TIMEOUT, interval: float = INTERVAL) -> Any:
    """Call `pred` until it returns something truthy (returned), or raise WaitTimeout after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(_message(what, timeout))
        time.sleep(interval)


async def until(pred: Callable[[], Any], what: str | Callable[[], Any] = "the condition", *,
                timeout: float = TIMEOUT, interval: float = INTERVAL) -> Any:
    """`wait_until` in a task: `pred` may be a plain or an async function; sleeps yield to the loop."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(_message(what, timeout))
        await anyio.sleep(interval)
