"""Helpers for end-to-end tests: a real daemon subprocess (and a client of it), schema validation of
everything received, the changes a subscriber hears."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import jsonschema

from sessiondag.rpc import schema as rpc_schema
from sessiondag_client import AsyncClient, connect_unix

SERVE = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "serve"]


class DaemonProc:
    """`sessiondag serve …` as a child process; waits for its readiness line on stderr."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, wait_ready: bool = True,
                 preexec_fn: Any = None):
        self.args = args
        self.proc = subprocess.Popen(SERVE + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env or dict(os.environ), preexec_fn=preexec_fn)
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        self._t = threading.Thread(target=self._drain, daemon=True)
        self._t.start()
        self.ready: dict[str, str] = {}
        if wait_ready:
            self.wait_ready()

    def _drain(self) -> None:
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            self._q.put(line)
        self._q.put(None)

    def wait_line(self, prefix: str, timeout: float = 30.0) -> str | None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no {prefix!r} line; stderr so far: {self.lines}") from None
            if line is None:
                return None
            if line.startswith(prefix):
                return line

    def wait_ready(self, timeout: float = 30.0) -> dict[str, str]:
        line = self.wait_line("sessiondag: ready", timeout)
        if line is None:
            raise RuntimeError(f"daemon exited before ready (rc={self.proc.wait()}): {self.lines}")
        for tok in line.split()[2:]:
            k, _, v = tok.partition("=")
            self.ready[k] = v
        return self.ready

    @property
    def socket(self) -> str:
        return self.ready["socket"]

    @property
    def tcp(self) -> tuple[str, int]:
        host, _, port = self.ready["tcp"].rpartition(":")
        return host, int(port)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout)
        self._t.join(5)
        return rc


@asynccontextmanager
async def serving(state_dir: Any, check: Any, env: dict[str, str] | None = None, *, args: Sequence[str] = (),
                  preexec_fn: Callable[[], None] | None = None) -> AsyncIterator[tuple[DaemonProc, AsyncClient]]:
    """A daemon on a socket for `state_dir` (with `env`, more `serve` flags `args`, `preexec_fn` run
    in the child: a resource limit) and a client of it whose every message `check` validates; the
    client closed and the daemon stopped (SIGTERM) after (its exit status: `d.proc.returncode`)."""
    d = DaemonProc(["--socket", "--state-dir", str(state_dir), *args], env=env, preexec_fn=preexec_fn)
    try:
        c = await connect_unix(d.socket)
        c.observer = check
        try:
            yield d, c
        finally:
            await c.aclose()
    finally:
        d.stop(signal.SIGTERM, timeout=30)


async def next_change(c: AsyncClient, sid: str, kind: str, timeout: float = 60.0) -> dict[str, Any]:
    """The next `session/did_change` change of `kind` the client hears for session `sid`."""
    while True:
        note = await c.next_notification("session/did_change", timeout=timeout)
        assert note["params"]["session_id"] == sid
        for ch in note["params"]["changes"]:
            if ch["kind"] == kind:
                return ch


class SchemaCheck:
    """Observer for AsyncClient: validates every response and notification against rpc_schema."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0
        self._validators: dict[tuple[str, str], Any] = {}

    def _validator(self, key: tuple[str, str]) -> Any:
        v = self._validators.get(key)
        if v is None:
            kind, method = key
            if kind == "error":
                s = rpc_schema.error_schema()
            elif kind == "result":
                s = rpc_schema.result_schema(method)
            else:
                s = rpc_schema.params_schema(method)
            v = self._validators[key] = jsonschema.Draft202012Validator(s)
        return v

    def __call__(self, method: str, msg: dict[str, Any]) -> None:
        self.count += 1
        methods = rpc_schema.load()["methods"]
        if method not in methods and "error" not in msg:
            self.failures.append(f"{method}: not in rpc_schema")
            return
        if "error" in msg:
            key, inst = ("error", ""), msg["error"]
            if msg["error"].get("code") not in rpc_schema.error_codes():
                self.failures.append(f"{method}: error code {msg['error'].get('code')} not in rpc_schema")
        elif "result" in msg:
            key, inst = ("result", method), msg["result"]
        else:
            key, inst = ("params", method), msg.get("params")
        for err in self._validator(key).iter_errors(inst):
            self.failures.append(f"{method} {key[0]}: {err.message} at {list(err.absolute_path)}")

    def assert_ok(self) -> None:
        assert not self.failures, "schema violations:\n" + "\n".join(self.failures[:20])


def git_fsck_all(state_dir: str) -> None:
    sessions = os.path.join(state_dir, "sessions")
    for name in os.listdir(sessions):
        if name.startswith("."):
            continue
        r = subprocess.run(["git", "--git-dir", os.path.join(sessions, name, "git"), "fsck", "--no-progress"],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"git fsck failed for {name}: {r.stdout}{r.stderr}"
