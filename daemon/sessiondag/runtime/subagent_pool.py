"""The sub-agents a runtime has spawned: their threads, so an entry point can wait for them, and
what each one attached to its spawning call. Below subagents.py (the spawn_agent tool) and
runtime_api.py, which names it as the Runtime's `subagent_pool`."""

from __future__ import annotations

import contextvars
import sys
import threading
from typing import Callable, TypedDict, TypeVarTuple, Unpack

from .cancellable import Cancellable


Ts = TypeVarTuple("Ts")


class Attached(TypedDict):
    """What a finished sub-agent attaches to its spawn_agent node (`metadata.attached`)."""

    branch_root: str
    head_id: str
    status: str      # completed | error
    result: str      # its answer (or error), cut at subagents.RESULT_CHARS


class SubAgentPool:
    """The sub-agents a runtime has spawned (threads), so an entry point can wait for them."""

    def __init__(self, runtime: Cancellable):
        self.runtime = runtime
        self._threads: list[threading.Thread] = []
        self._cond = threading.Condition()
        self.finished: list[Attached] = []

    def start(self, fn: Callable[[Unpack[Ts]], None], *args: Unpack[Ts]) -> None:
        ctx = contextvars.copy_context()
        t = threading.Thread(target=self._run, args=(ctx, fn, args), daemon=True, name="sessiondag-subagent")
        with self._cond:
            self._threads.append(t)
        t.start()

    def _run(self, ctx: contextvars.Context, fn: Callable[[Unpack[Ts]], None], args: tuple[Unpack[Ts]]) -> None:
        try:
            ctx.run(fn, *args)
        except BaseException as e:  # never lose a sub-agent failure silently
            print(f"sessiondag: sub-agent thread failed: {type(e).__name__}: {e}", file=sys.stderr)
        finally:
            with self._cond:
                self._threads.remove(threading.current_thread())
                self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return len(self._threads)

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._threads, timeout)
