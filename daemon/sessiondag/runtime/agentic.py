"""@agentic_function: a Python function whose call is a code node and whose docstring instructs the
model calls made inside its body.

Calling one records a code node: name, input = the bound arguments, output = the return value,
status. An exception finalizes the node as `error` (metadata.error = {type, message, trace}) and
re-raises; RunCancelled finalizes it as `cancelled`. The node's caller is the current call (nested
calls are attributed to their caller) or the current turn's start node, with predecessor None.
Called at top level inside a session (no turn, no call) it is a ROOT-level chain node at HEAD and
its call is one committed turn, under the session's turn lock like `run_turn` (it waits for a turn
running in another thread or process rather than forking it). Called outside any session it opens a real ad-hoc session (the id
goes to stderr and to `fn.last_session_id`) instead of doing nothing.

Options: `expose` ("io" | "full" | "none": what other frames see of its internals), `name`,
`subprocess=True` (run the body in a spawned fresh interpreter, see subprocess_body.py).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import time
import traceback
from typing import Any, Callable, Generic, ParamSpec, TypeVar, Unpack, cast, overload

import orjson

from ..core.model import ROOT, Call, error_metadata
from ..core.usage import LATENCY_KEY
from .context import (Frame, SessionWriter, TurnState, call_scope, current_call_id, current_runtime, current_turn,
                      current_writer, session_context, turn_scope)
from .errors import RunCancelled
from .runtime_api import RuntimeApi
from .subprocess_body import run_body_in_subprocess
from .turns import turn_lock
from .writer import NodeUpdate


EXPOSE_VALUES = ("io", "full", "none")

P = ParamSpec("P")
R = TypeVar("R")


class AgenticFunction(Generic[P, R]):
    """What @agentic_function returns, as the type checker sees it: the function, called the same
    way, with the attributes the decorator sets on its wrapper (the wrapper itself is a plain
    function; this class is never instantiated)."""

    agentic: bool
    expose: str | None
    subprocess: bool
    function_name: str
    last_session_id: str | None
    __doc__: str | None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        raise NotImplementedError


def jsonable(value: object) -> Any:
    """A JSON-able copy of `value` (unknown objects become their repr)."""
    try:
        return orjson.loads(orjson.dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS))
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


@overload
def agentic_function(fn: Callable[P, R], *, expose: str | None = None, name: str | None = None,
                     subprocess: bool = False) -> AgenticFunction[P, R]: ...


@overload
def agentic_function(fn: None = None, *, expose: str | None = None, name: str | None = None,
                     subprocess: bool = False) -> Callable[[Callable[P, R]], AgenticFunction[P, R]]: ...


def agentic_function(fn: Callable[P, R] | None = None, *, expose: str | None = None, name: str | None = None,
                     subprocess: bool = False) -> AgenticFunction[P, R] | Callable[[Callable[P, R]], AgenticFunction[P, R]]:
    if expose is not None and expose not in EXPOSE_VALUES:
        raise ValueError(f"expose must be one of {EXPOSE_VALUES}, not {expose!r}")

    def decorate(f: Callable[P, R]) -> AgenticFunction[P, R]:
        sig = inspect.signature(f)
        fname = name or f.__name__

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            if current_writer() is None:
                with session_context() as h:
                    wrapper.last_session_id = h.session_id
                    print(f"sessiondag: ad-hoc session {h.session_id} "
                          f"(pass session_id={h.session_id!r} to continue)", file=sys.stderr)
                    return wrapper(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return run_function(f, fname, wrapper.__doc__, dict(bound.arguments), args, kwargs,
                                expose=expose, subprocess=subprocess)
        # the attributes below are set on the function object itself
        wrapper = cast("AgenticFunction[P, R]", functools.wraps(f)(call))

        wrapper.agentic = True
        wrapper.expose = expose
        wrapper.subprocess = subprocess
        wrapper.function_name = fname
        wrapper.last_session_id = None
        return wrapper

    return decorate(fn) if fn is not None else decorate


def run_function(f: Callable[..., R], fname: str, doc: str | None, arguments: dict[str, object], args: tuple[object, ...],
                 kwargs: dict[str, object], *, expose: str | None, subprocess: bool) -> R:
    w = current_writer()
    assert w is not None  # the wrapper opened a session_context when there was none
    turn = current_turn()
    caller = current_call_id() or (turn.start_id if turn is not None else None)
    md: dict[str, object] = {"function": f"{f.__module__}.{f.__qualname__}"}
    if expose is not None:
        md["expose"] = expose
    if subprocess:
        md["subprocess"] = True
    top = caller is None
    # at top level the call is a turn of its own: it waits for a running turn instead of forking it
    with turn_lock(w) if top else contextlib.nullcontext():
        return _run(w, f, fname, doc, arguments, args, kwargs, caller, md, subprocess, top)


def _run(w: SessionWriter, f: Callable[..., R], fname: str, doc: str | None, arguments: dict[str, object],
         args: tuple[object, ...], kwargs: dict[str, object], caller: str | None, md: dict[str, object], subprocess: bool,
         top: bool) -> R:
    rt = current_runtime()
    if top:
        if rt is not None:  # outside any chat turn: the same recorded system prompt as a turn
            rt.pin_system_prompt(w)
        h = w.head_id
        node = Call("code", fname, input=jsonable(arguments), caller=ROOT,
                    predecessor=ROOT if h == ROOT else h, status="running", metadata=md)
    else:
        assert caller is not None  # not top: there is a caller
        node = Call("code", fname, input=jsonable(arguments), caller=caller, predecessor=None,
                    status="running", metadata=md)
    node = w.append(node)
    t0 = time.monotonic()
    if rt is not None:
        rt.emit("node_appended", session_id=w.session_id, node=node.to_dict())
    frame = Frame(node.id, fname, doc)
    try:
        if top:
            with turn_scope(TurnState(None, node.id, [node.id])), call_scope(frame):
                result = _body(f, frame, args, kwargs, subprocess)
        else:
            with call_scope(frame):
                result = _body(f, frame, args, kwargs, subprocess)
    except RunCancelled:
        _finish(w, rt, node.id, t0, status="cancelled")
        if top:
            w.commit_turn()
        raise
    except BaseException as e:
        _finish(w, rt, node.id, t0, status="error", metadata={"error": error_metadata(e, traceback.format_exc())})
        if top:
            w.commit_turn()
        raise
    _finish(w, rt, node.id, t0, output=jsonable(result), status="completed")
    if top:
        w.commit_turn()
    return result


def _body(f: Callable[..., R], frame: Frame, args: tuple[object, ...], kwargs: dict[str, object], subprocess: bool) -> R:
    if subprocess:
        result: R = run_body_in_subprocess(f, frame, args, kwargs)  # the child's JSON answer
        return result
    return f(*args, **kwargs)


def _finish(w: SessionWriter, rt: RuntimeApi | None, node_id: str, t0: float, **fields: Unpack[NodeUpdate]) -> None:
    """End the node, recording the call's wall time (`sessiondag.latency_ms`) whatever its outcome."""
    fields["metadata"] = {**(fields.get("metadata") or {}), LATENCY_KEY: round((time.monotonic() - t0) * 1000, 3)}
    c = w.update(node_id, **fields)
    if rt is not None:
        rt.emit("node_updated", session_id=w.session_id, node=c.to_dict())
