"""run_command: a shell command in the working dir (permission "run"), its own process group,
killed on timeout and on a cancel of the run (polled, so a cancel ends it within POLL seconds);
output (stdout and stderr together) capped at MAX_OUTPUT bytes."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

from .errors import RunCancelled

MAX_OUTPUT = 64 * 1024
POLL = 0.1


def _kill(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_command(ctx: Any, command: str, timeout: float = 60) -> str:
    rt = ctx.runtime
    rt.require_permission("run", {"tool": "run_command", "command": command})
    timeout = max(0.1, min(float(timeout), 600.0))
    p = subprocess.Popen(["/bin/sh", "-c", command], cwd=os.path.realpath(ctx.working_dir),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                out, _ = p.communicate(timeout=max(0.0, min(POLL, deadline - time.monotonic())))
                status = f"exit code {p.returncode}"
                break
            except subprocess.TimeoutExpired:
                if rt.cancelled():
                    raise RunCancelled("the run was cancelled (the command was killed)") from None
                if time.monotonic() >= deadline:
                    _kill(p)
                    out, _ = p.communicate()
                    status = f"timed out after {timeout:g}s (killed)"
                    break
    finally:
        if p.returncode is None:
            _kill(p)
            p.communicate()
    text = out[:MAX_OUTPUT].decode("utf-8", errors="replace")
    if len(out) > MAX_OUTPUT:
        text += f"\n[… output truncated at {MAX_OUTPUT} bytes]"
    return f"{status}\n{text}"
