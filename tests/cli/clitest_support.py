"""Helpers for the CLI tests: run `sessiondag …` as a real subprocess, in a pty when a terminal
matters, and make sure every daemon a test started is gone afterwards."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time

from waiting import WaitTimeout, wait_until

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


def env_for(home, **extra) -> dict[str, str]:
    e = dict(os.environ)
    e["SESSIONDAG_HOME"] = str(home)
    for k in ("SESSIONDAG_PROVIDER", "SESSIONDAG_SCRIPT", "SESSIONDAG_MODEL"):
        e.pop(k, None)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def sd(args, *, home, cwd=None, env=None, input=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + [str(a) for a in args], cwd=cwd, env=env_for(home, **(env or {})), input=input,
                          capture_output=True, text=True, timeout=timeout)


def stop_daemon_of(home) -> None:
    """Stop the daemon serving `home` (if any) and wait for it to be gone."""
    pidfile = os.path.join(str(home), "daemon.pid")
    try:
        import json
        pid = json.load(open(pidfile))["pid"]
    except (OSError, ValueError, KeyError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        wait_until(lambda: not _exists(pid), f"daemon {pid} to stop after SIGTERM", timeout=30, interval=0.02)
    except WaitTimeout:
        os.kill(pid, signal.SIGKILL)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Pty:
    """A command on a pseudo-terminal: read what it prints until a pattern shows, type lines."""

    def __init__(self, args, *, env, cwd=None):
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(CLI + [str(a) for a in args], stdin=slave, stdout=slave, stderr=slave,
                                     env=env, cwd=cwd, start_new_session=True)
        os.close(slave)
        self.out = ""

    def expect(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.out:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} never appeared; got:\n{self.out}")
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""
                if not data:
                    raise AssertionError(f"EOF before {text!r}; got:\n{self.out}")
                self.out += data.decode(errors="replace")
        return self.out

    def expect_after(self, marker: str, text: str, timeout: float = 60.0) -> str:
        """Wait for `text` printed after the first `marker` (e.g. the prompt after a turn's end)."""
        self.expect(marker, timeout)
        start = self.out.index(marker) + len(marker)
        deadline = time.monotonic() + timeout
        while text not in self.out[start:]:
            self._read_more(deadline)
        return self.out

    def _read_more(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out; got:\n{self.out}")
        r, _, _ = select.select([self.master], [], [], left)
        if r:
            data = os.read(self.master, 4096)
            if not data:
                raise AssertionError(f"EOF; got:\n{self.out}")
            self.out += data.decode(errors="replace")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def wait(self, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            r, _, _ = select.select([self.master], [], [], 0.1)
            if r:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""
                self.out += data.decode(errors="replace")
        code = self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        while True:  # what is left in the pty
            r, _, _ = select.select([self.master], [], [], 0)
            if not r:
                break
            try:
                data = os.read(self.master, 4096)
            except OSError:
                break
            if not data:
                break
            self.out += data.decode(errors="replace")
        os.close(self.master)
        return code
