"""Run an agentic function's body in a spawned fresh interpreter (never fork).

The parent records the function node, then starts `python -m sessiondag.runtime.subprocess_body
SPEC` in a new process group. The child enters the same session through `session_context` (its
own SessionStore on the same state dir), makes the function node its current call, and runs the
raw body: every node it records (model calls, nested functions) lands in the session's journal
under that node. The parent waits, re-reads the on-disk truth, and finalizes the function node
from the child's result file. Cancelling the runtime kills the child's whole process group
(SIGKILL) and the node becomes `cancelled`. The child's `ask_user` and permission checks are
answered by the parent's handlers over a pipe relay (runtime/relay.py).

The body's module must be importable by name in a fresh interpreter (not `__main__`), and its
arguments and return value must be JSON-able.
"""

from __future__ import annotations

import importlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import traceback
from typing import Any, Callable

import orjson

from .context import Frame, current_runtime, current_turn, current_writer
from .relay import ParentRelay

POLL = 0.02


def run_body_in_subprocess(f: Callable, frame: Frame, args: tuple, kwargs: dict) -> Any:
    w = current_writer()
    rt = current_runtime()
    turn = current_turn()
    if f.__module__ == "__main__":
        raise ValueError(f"{f.__qualname__}: a subprocess body must live in an importable module, not __main__")
    with tempfile.TemporaryDirectory(prefix="sessiondag-body-") as tmp:
        spec_path = os.path.join(tmp, "spec.json")
        result_path = os.path.join(tmp, "result.json")
        spec = {
            "state_dir": w.store.state_dir, "session_id": w.session_id,
            "working_dir": w.session.info.get("working_dir"), "node_id": frame.node_id,
            "name": frame.name, "doc": frame.doc, "module": f.__module__, "qualname": f.__qualname__,
            "args": list(args), "kwargs": kwargs, "sys_path": [p for p in sys.path if p],
            "provider": rt.provider.config() if rt is not None else None,
            "identity": rt.identity if rt is not None else None,
            "turn": {"start_id": turn.start_id, "tip": turn.tip} if turn is not None else None,
            "result_path": result_path,
        }
        # the handler relay: the child's ask_user / permission checks are answered by our runtime
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        spec["relay"] = {"read": to_child_r, "write": from_child_w}
        with open(spec_path, "wb") as fh:
            fh.write(orjson.dumps(spec))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(spec["sys_path"])
        try:
            proc = subprocess.Popen([sys.executable, "-m", "sessiondag.runtime.subprocess_body", spec_path],
                                    stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), env=env,
                                    start_new_session=True, pass_fds=(to_child_r, from_child_w))
        except BaseException:
            os.close(from_child_r)
            os.close(to_child_w)
            raise
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        if rt is None:
            from .runtime import Runtime
            handlers = Runtime(subagents=False)  # the same defaults an in-process call would get
        else:
            handlers = rt
        relay = ParentRelay(from_child_r, to_child_w, handlers)
        if rt is not None:
            rt.emit("subprocess_started", session_id=w.session_id, node_id=frame.node_id, pid=proc.pid)
        try:
            _supervise(proc, relay, rt)
        except BaseException:
            stop(proc)
            raise
        finally:
            relay.close()
            w.session.graph  # re-read the on-disk truth the child wrote
        if rt is not None:
            rt.check_cancelled()
        try:
            with open(result_path, "rb") as fh:
                res = orjson.loads(fh.read())
        except (OSError, orjson.JSONDecodeError):
            from .errors import SubprocessBodyError
            raise SubprocessBodyError("ProcessDied", f"the body exited with code {proc.returncode} "
                                      "without a result") from None
    if res.get("ok"):
        return res.get("value")
    from .errors import SubprocessBodyError
    raise SubprocessBodyError(res.get("type", "Exception"), res.get("message", ""), res.get("trace", ""))


def _supervise(proc: subprocess.Popen, relay: ParentRelay, rt: Any) -> None:
    """Answer the child's handler requests until it exits; kill it if the run is cancelled."""
    relay_open = True
    while proc.poll() is None:
        if rt is not None and rt.cancelled():
            stop(proc)
            return
        if relay_open:
            ready, _, _ = select.select([relay.read_fd], [], [], POLL)
            if ready:
                relay_open = relay.pump()
        else:
            try:
                proc.wait(timeout=POLL)
            except subprocess.TimeoutExpired:
                pass


def stop(proc: subprocess.Popen) -> None:
    """Kill the body's whole process group and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _child(spec_path: str) -> int:
    with open(spec_path, "rb") as fh:
        spec = orjson.loads(fh.read())
    for p in reversed(spec["sys_path"]):
        if p not in sys.path:
            sys.path.insert(0, p)
    from ..store import SessionStore
    from ..store.durable_files import write_file_atomic
    from .context import Frame, TurnState, call_scope, session_context, turn_scope
    from .providers import make_provider
    from .relay import ChildRelay
    from .runtime import Runtime

    def write_result(obj: dict[str, Any]) -> None:
        # whole or absent for the parent, which reads it once this process exits; the temp dir
        # holding it is gone after that, so it is not fsync'd
        write_file_atomic(spec["result_path"], orjson.dumps(obj, default=repr), durable=False)

    try:
        obj: Any = importlib.import_module(spec["module"])
        for part in spec["qualname"].split("."):
            obj = getattr(obj, part)
        body = getattr(obj, "__wrapped__", obj)
        relay = ChildRelay(spec["relay"]["read"], spec["relay"]["write"])
        kw: dict[str, Any] = {"ask_user": relay.ask_user, "permissions": relay.permissions}
        if spec.get("identity"):
            kw["identity"] = spec["identity"]
        rt = Runtime(make_provider(spec["provider"]), **kw)
        with session_context(spec["session_id"], working_dir=spec["working_dir"],
                             store=SessionStore(spec["state_dir"]), runtime=rt,
                             allow_working_dir_mismatch=True):
            t = spec.get("turn")
            turn = TurnState(t["start_id"], t["tip"]) if t else None
            frame = Frame(spec["node_id"], spec["name"], spec["doc"])
            if turn is not None:
                with turn_scope(turn), call_scope(frame):
                    value = body(*spec["args"], **spec["kwargs"])
            else:
                with call_scope(frame):
                    value = body(*spec["args"], **spec["kwargs"])
        write_result({"ok": True, "value": value})
        return 0
    except BaseException as e:
        write_result({"ok": False, "type": type(e).__name__, "message": str(e), "trace": traceback.format_exc()})
        return 1


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
