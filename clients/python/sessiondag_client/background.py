"""The one task of a connection that outlives the call that started it: its reader.

anyio has structured tasks only (a task group is entered and left by one task), but a client is
opened by `await connect()` and closed later, perhaps from another task (SyncClient runs each call
as a task of its own), so the reader cannot live in the caller's task group. `Background.start()`
starts one free-standing task on whichever backend runs: `create_task` on asyncio's loop, a system
task on trio. That is the whole of it that knows the backend (docs/architecture.md "One async
framework"); the task's body is anyio, the tasks it starts go into a task group of its own, and
`cancel()` / `wait()` end it from any task.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable

import anyio
import anyio.lowlevel

_RUNNING: set[asyncio.Task[None]] = set()   # asyncio keeps weak references to tasks only


class Background:
    def __init__(self, body: Callable[[], Awaitable[None]], name: str):
        self._body = body
        self._name = name
        self._scope = anyio.CancelScope()
        self._done: anyio.Event | None = None
        self.error: Exception | None = None   # what the body raised, if it failed (it is not re-raised)

    def start(self) -> None:
        """Start the body as a free-standing task of the running event loop."""
        self._done = anyio.Event()
        native = anyio.lowlevel.current_token().native_token
        if isinstance(native, asyncio.AbstractEventLoop):
            task = native.create_task(self._run(), name=self._name)
            _RUNNING.add(task)
            task.add_done_callback(_RUNNING.discard)
        else:
            import trio   # the only other backend anyio has
            trio.lowlevel.spawn_system_task(self._run, name=self._name)

    async def _run(self) -> None:
        try:
            with self._scope:
                await self._body()
        except Exception as e:  # noqa: BLE001 - a trio system task must not raise; recorded instead
            self.error = e
        finally:
            assert self._done is not None
            self._done.set()

    @property
    def running(self) -> bool:
        return self._done is not None and not self._done.is_set()

    def cancel(self) -> None:
        self._scope.cancel()

    async def wait(self) -> None:
        if self._done is not None:
            await self._done.wait()
