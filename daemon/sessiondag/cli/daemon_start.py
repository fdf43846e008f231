"""Starting the daemon of a state dir: the one place that does it. `sessiondag daemon start` runs
this, and every client — the Python client's `connect(auto_start=True)`, the TypeScript client
(VS Code), the Neovim plugin — runs `sessiondag daemon start --wait --json` instead of spawning
`serve` itself, so an auto-started daemon always logs to `<state dir>/daemon.log` (what `daemon
logs` prints) and a start race always ends with one daemon.

`sessiondag serve --socket` is spawned detached (its own session, stdin from /dev/null, stdout and
stderr appended to the log). With wait, the call returns once the pidfile names that process and
its socket answers; if the child exits first, the daemon another starter won the race with is
returned instead (waited for a moment while it binds), or DaemonStartError carries the child's
last log lines.

One start at a time: a starter holds `<state dir>/daemon.starting` (flock) from before it looks
for a daemon until its child answers — the child inherits the lock and lets it go once it is ready
(`ready()`, called by serve), or by exiting. So `daemon start --no-wait` followed at once by
`daemon start --wait` (an editor's two clients, say) waits for that first child instead of racing
it with a second one whose winner is a matter of scheduling.
"""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import threading
import time
from sessiondag_client.discovery import (DaemonRecord, DaemonStartError, answering, find_daemon, log_path, read_pidfile,
                                        socket_for)

START_LOCK_ENV = "SESSIONDAG_START_LOCK_FD"   # the inherited fd of daemon.starting, in the child


def _serve_command(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "serve", *args]


def _tail(path: str, offset: int, lines: int = 5) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    rows = [r for r in text.splitlines() if r.strip()]
    return "\n".join(rows[-lines:])


RACE_GRACE = 5.0     # seconds a starter that lost the state-dir lock waits for the winner to answer
LOCK_HELD = 3        # `serve`'s exit status for a setup failure (another daemon holds the state dir)


def _winner(state_dir: str, code: int, until: float) -> DaemonRecord | None:
    """The daemon another starter won the race with, once it answers: a child that exited because
    the state dir's lock is held waits a moment for the holder's pidfile and socket (the holder may
    still be binding); None when none answers by then."""
    while True:
        other = answering(read_pidfile(state_dir))
        if other:
            return other
        if code != LOCK_HELD or time.monotonic() > until:
            return None
        time.sleep(0.02)


def _hold_start_lock(state_dir: str, deadline: float) -> int:
    """The fd holding `daemon.starting` exclusively, once no other start is under way."""
    fd = os.open(os.path.join(state_dir, "daemon.starting"),
                 os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
        if time.monotonic() > deadline:
            os.close(fd)
            raise DaemonStartError(f"another start of the sessiondag daemon for {state_dir} was still under "
                                   f"way after the timeout; see {log_path(state_dir)}")
        time.sleep(0.02)


def private() -> None:
    """In a daemon a starter spawned, first thing: the start lock's fd goes to no child of its own."""
    fd = os.environ.get(START_LOCK_ENV, "")
    if fd.isdigit():
        try:
            os.set_inheritable(int(fd), False)
        except OSError:
            pass


def ready() -> None:
    """In a daemon a starter spawned: it answers now, so the next starter may look (see the top)."""
    fd = os.environ.pop(START_LOCK_ENV, None)
    if fd is not None and fd.isdigit():
        try:
            os.close(int(fd))
        except OSError:
            pass


def start(state_dir: str, *, socket: str | None = None, idle_timeout: float | None = None,
          timeout: float = 20.0, wait: bool = True) -> DaemonRecord:
    """Spawn `sessiondag serve --socket` for `state_dir`, detached, unless a start under way (or
    already done) gives a daemon. Returns {pid, socket, log, started, …}: with wait, the daemon's
    pidfile record once it answers; without, the child's pid and the socket it will bind."""
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    lock = _hold_start_lock(state_dir, time.monotonic() + timeout)
    try:
        other = find_daemon(state_dir)   # a start that held the lock before us has finished
        if other is not None:
            return {**other, "started": False}
        return _spawn(state_dir, lock, socket, idle_timeout, timeout, wait)
    finally:
        os.close(lock)


def _spawn(state_dir: str, lock: int, socket: str | None, idle_timeout: float | None,
           timeout: float, wait: bool) -> DaemonRecord:
    log = log_path(state_dir)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    offset = os.lseek(fd, 0, os.SEEK_END)
    args = ["--socket", *([socket] if socket else []), "--state-dir", state_dir, "--log-file", log]
    if idle_timeout:
        args += ["--idle-timeout", str(idle_timeout)]
    try:
        proc = subprocess.Popen(_serve_command(*args), stdin=subprocess.DEVNULL, stdout=fd, stderr=fd,
                                start_new_session=True, pass_fds=(lock,),
                                env={**os.environ, START_LOCK_ENV: str(lock)})
    finally:
        os.close(fd)
    if not wait:
        return {"pid": proc.pid, "socket": os.path.abspath(socket) if socket else socket_for(state_dir),
                "log": log, "started": True, "ready": False}
    # reap the child if it exits while this process still runs (a failed start)
    threading.Thread(target=proc.wait, name="sessiondag-daemon-reaper", daemon=True).start()
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        pidfile = read_pidfile(state_dir)
        info = answering(pidfile) if pidfile and pidfile["pid"] == proc.pid else None
        if info:
            return {**info, "started": True}
        code = proc.returncode
        if code is not None:
            other = _winner(state_dir, code, min(deadline, time.monotonic() + RACE_GRACE))
            if other is not None:
                return {**other, "started": False}
            why = _tail(log, offset) or f"exit status {code}"
            raise DaemonStartError(f"the sessiondag daemon for {state_dir} exited with status {code} before "
                                   f"it was ready:\n{why}\n(log: {log})")
        if time.monotonic() > deadline:
            raise DaemonStartError(f"the sessiondag daemon for {state_dir} (pid {proc.pid}) was not ready "
                                   f"after {timeout:.0f}s; see {log}")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
