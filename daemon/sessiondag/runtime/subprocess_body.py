"""Run an agentic function's body in a spawned fresh interpreter (never fork).

The parent records the function node, then starts `python -m sessiondag.runtime.subprocess_child
SPEC` in a new process group (subprocess_child.py is the child's side). The child enters the same
session through `session_context` (its own SessionStore on the same state dir), makes the function
node its current call, and runs the raw body: every node it records (model calls, nested functions) lands in the session's journal
under that node. The parent waits, re-reads the on-disk truth, and finalizes the function node
from the child's result file. Cancelling the runtime kills the child's whole process group
(SIGKILL) and the node becomes `cancelled`. The child's `ask_user` and permission checks are
answered by the parent's handlers over a pipe relay (runtime/relay.py).

The body's module must be importable by name in a fresh interpreter (not `__main__`), and its
arguments and return value must be JSON-able.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
from typing import Any, Callable

import orjson

from .ask_user import default_handler
from .context import Frame, current_runtime, current_turn, current_writer
from .errors import SubprocessBodyError
from .permissions import env_permissions
from .relay import Handlers, ParentRelay
from .runtime_api import RuntimeApi


POLL = 0.02


def run_body_in_subprocess(f: Callable[..., object], frame: Frame, args: tuple[object, ...],
                           kwargs: dict[str, object]) -> Any:
    w = current_writer()
    assert w is not None  # run_function runs inside a session_context
    rt = current_runtime()
    turn = current_turn()
    if f.__module__ == "__main__":
        raise ValueError(f"{f.__qualname__}: a subprocess body must live in an importable module, not __main__")
    with tempfile.TemporaryDirectory(prefix="sessiondag-body-") as tmp:
        spec_path = os.path.join(tmp, "spec.json")
        result_path = os.path.join(tmp, "result.json")
        sys_path = [p for p in sys.path if p]
        spec = {
            "state_dir": w.store.state_dir, "session_id": w.session_id,
            "working_dir": w.session.info.get("working_dir"), "node_id": frame.node_id,
            "name": frame.name, "doc": frame.doc, "module": f.__module__, "qualname": f.__qualname__,
            "args": list(args), "kwargs": kwargs, "sys_path": sys_path,
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
        env["PYTHONPATH"] = os.pathsep.join(sys_path)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "sessiondag.runtime.subprocess_child", spec_path],
                                    stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), env=env,
                                    start_new_session=True, pass_fds=(to_child_r, from_child_w))
        except BaseException:
            os.close(from_child_r)
            os.close(to_child_w)
            raise
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        # no runtime: the same default handlers an in-process call would get
        handlers = rt if rt is not None else Handlers(default_handler(w.session.settings()), env_permissions(w.session.settings()))
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
            raise SubprocessBodyError("ProcessDied", f"the body exited with code {proc.returncode} "
                                      "without a result") from None
    if res.get("ok"):
        return res.get("value")
    raise SubprocessBodyError(res.get("type", "Exception"), res.get("message", ""), res.get("trace", ""))


def _supervise(proc: subprocess.Popen[bytes], relay: ParentRelay, rt: RuntimeApi | None) -> None:
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


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the body's whole process group and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
