"""A tool call in its own thread, so that a cancel always ends the turn (issue 19, item 3).

A tool may block where no cancel reaches it: an extra tool stuck in `open()` on a FIFO, a read from
a stalled network peer, a client that never answers. `call_tool` runs the tool in a daemon thread
(in a copy of the caller's context, so the tool's frames and writer are the caller's) and waits for
it or for the runtime's cancel, polling every POLL seconds. On a cancel it abandons the thread: the
writer is fenced against that thread (SessionWriter.fence: any later append, update or commit from
it raises RunCancelled and writes nothing), and RunCancelled is raised in the caller, which then
finalizes the tool node `cancelled` and commits the turn, releasing the turn lock. The abandoned
thread ends whenever its syscall returns; it is a daemon thread, so it never holds up the process.

What the fence cannot stop: writes the tool makes by other means than the session writer (its own
files, a Session object it reached directly). The built-in tools write sessions only through it.
"""

from __future__ import annotations

import contextvars
import threading
from typing import TYPE_CHECKING, Callable, ParamSpec, TypeVar

from .cancellable import Cancellable
from .errors import RunCancelled

if TYPE_CHECKING:
    from .writer import SessionWriter

POLL = 0.05
P = ParamSpec("P")
R = TypeVar("R")


def call_tool(w: SessionWriter, rt: Cancellable, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """fn(*args, **kwargs) in a thread; its result or exception, or RunCancelled once rt is cancelled."""
    rt.check_cancelled()
    ctx = contextvars.copy_context()
    result: list[R] = []                 # fn's result, once it returned
    error: list[BaseException] = []      # ... or what it raised
    box = {"done": False, "abandoned": False}
    lock = threading.Lock()
    done = threading.Event()

    def body() -> None:
        try:
            result.append(ctx.run(fn, *args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            error.append(e)
        finally:
            with lock:
                box["done"] = True
                abandoned = box["abandoned"]
            if abandoned:
                w.unfence(threading.get_ident())   # this thread touches nothing more; its id may be reused
            done.set()

    t = threading.Thread(target=body, name=f"sessiondag-tool-{getattr(fn, '__name__', 'tool')}", daemon=True)
    t.start()
    while not done.wait(POLL):
        if rt.cancelled():
            with lock:
                if not box["done"]:
                    box["abandoned"] = True
                    w.fence(t.ident)
                    raise RunCancelled("the run was cancelled (the tool was left behind)")
    if error:
        raise error[0]
    return result[0]
