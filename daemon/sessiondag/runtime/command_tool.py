"""run_command: a shell command in the working dir (permission "run"), its own process group,
killed on timeout and on a cancel of the run (polled, so a cancel ends it within POLL seconds);
output (stdout and stderr together) capped at MAX_OUTPUT bytes.

Sandbox (setting agent.sandbox, the Runtime's `sandbox`): `workspace-write` (default) runs the shell
through workspace/sandbox_exec.py under Landlock: writes only beneath the working dir and a private
tmp dir (TMPDIR, removed afterwards), no TCP bind/connect unless agent.sandbox_network; `read-only`
writes only to the private tmp; `off` runs with the daemon's rights. The mode is recorded on the
tool node (`metadata.sandbox`). How (agent.sandbox_via): `auto` uses Landlock where the kernel has
it, else bubblewrap (workspace/sandbox_bwrap.py); `landlock` / `bwrap` insist on one. With neither a
sandboxed command is refused (PermissionDeniedError), never run with the daemon's rights."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Literal, Mapping

from ..workspace import sandbox_bwrap, sandbox_exec
from .cancellable import ToolHost
from .errors import PermissionDeniedError, RunCancelled
from .tool_context import ToolContext
from .tool_result import ToolResult


MAX_OUTPUT = 64 * 1024
POLL = 0.1


def _kill(p: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


Terminal = Callable[[list[str], str, float], Mapping[str, object]]
"""A client's terminal running argv in cwd with a timeout: its agent/run_in_terminal answer."""

Via = tuple[Literal["landlock"], int] | tuple[Literal["bwrap"], str] | tuple[Literal["off"], None]
"""How a command is confined: Landlock (its ABI), bubblewrap (its path), or not at all."""


def _argv(mode: str, via: Via, wd: str, tmp: str | None, net: bool, command: str) -> list[str]:
    shell = ["/bin/sh", "-c", command]
    if mode == "off":
        return shell
    if via[0] == "bwrap":
        return sandbox_bwrap.argv(via[1], mode, wd, tmp or "", net, shell)
    return [sys.executable, "-m", "sessiondag.workspace.sandbox_exec", mode, wd, tmp or "", "1" if net else "0",
            "--", *shell]


def _via(choice: str) -> Via:
    """("landlock", abi) or ("bwrap", its path) for agent.sandbox_via, or PermissionDeniedError."""
    if choice in ("auto", "landlock"):
        abi = sandbox_exec.abi()
        if abi >= 1:
            return "landlock", abi
    if choice in ("auto", "bwrap"):
        bwrap = sandbox_bwrap.path()
        if bwrap is not None:
            return "bwrap", bwrap
    missing = {"auto": "Landlock missing and no bwrap on PATH", "landlock": "Landlock missing",
               "bwrap": "no bwrap on PATH"}.get(choice, f"unknown agent.sandbox_via {choice!r}")
    raise PermissionDeniedError("run", f"no OS sandbox here ({missing}); agent.sandbox = off runs "
                                "commands with the daemon's rights")


def run_command(ctx: ToolContext, command: str, timeout: float = 60) -> ToolResult:
    rt = ctx.runtime
    rt.require_permission("run", {"tool": "run_command", "command": command})
    timeout = max(0.1, min(float(timeout), 600.0))
    mode = getattr(rt, "sandbox", "workspace-write")
    net = bool(getattr(rt, "sandbox_network", False))
    wd = os.path.realpath(ctx.working_dir)
    via = _via(getattr(rt, "sandbox_via", "auto")) if mode != "off" else ("off", None)
    tmp = tempfile.mkdtemp(prefix="sessiondag-run-") if mode != "off" else None
    try:
        argv = _argv(mode, via, wd, tmp, net, command)
        terminal = getattr(rt, "client_terminal", None)   # the client's terminal runs the same argv
        text = _in_terminal(rt, terminal, argv, wd, timeout) if terminal is not None else _run(rt, argv, wd, timeout)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if mode == "off":
        md: dict[str, object] = {"mode": mode}
    elif via[0] == "landlock":
        md = {"mode": mode, "via": "landlock", "abi": via[1], "network": net or via[1] < 4}
    else:
        md = {"mode": mode, "via": "bwrap", "network": net}
    return ToolResult(text, {"sandbox": md})


def _run(rt: ToolHost, argv: list[str], wd: str, timeout: float) -> str:
    p = subprocess.Popen(argv, cwd=wd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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


def _in_terminal(rt: ToolHost, terminal: Terminal, argv: list[str], wd: str, timeout: float) -> str:
    """The command run by the client's terminal (it kills it at the timeout or a cancel); the
    answer in the form _run gives. Killed because the run was cancelled: cancelled, as _run."""
    res = terminal(argv, wd, timeout)
    if rt.cancelled():
        raise RunCancelled("the run was cancelled (the client's terminal killed the command)")
    if res.get("timed_out"):
        status = f"timed out after {timeout:g}s (killed)"
    elif res.get("exit_code") is not None:
        status = f"exit code {res['exit_code']}"
    else:
        status = f"killed by signal {res.get('signal') or '?'}"
    text = str(res.get("output") or "")
    data = text.encode()
    if len(data) > MAX_OUTPUT:
        text = data[:MAX_OUTPUT].decode("utf-8", errors="replace") + f"\n[… output truncated at {MAX_OUTPUT} bytes]"
    elif res.get("truncated"):
        text += "\n[… output truncated by the terminal]"
    return f"{status}\n{text}"
