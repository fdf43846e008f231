"""Finding the daemon that serves a state dir, and starting one.

Rules:

1. The state dir is `state_dir` if given, else $SESSIONDAG_HOME, else $XDG_STATE_HOME/sessiondag,
   else ~/.local/state/sessiondag. Never the config file: `store.state_dir` is not a file setting (the
   daemon refuses a file that sets it, saying where it goes), so a dir only the file names has no daemon.
2. A serving daemon records itself in `<state dir>/daemon.pid` (pid, socket, tcp, log, version). When
   that pid is alive, its `socket` is the address — whatever this process's $XDG_RUNTIME_DIR says, so an
   editor, a tmux pane, an ssh session and a CI step reach the same daemon.
3. Otherwise the default socket `<runtime dir>/sd-<key>.sock` is tried (a daemon that predates rule 2).
4. Nothing answers: `DaemonNotRunningError` names the state dir, the socket and the command to run —
   or, with auto-start, `start_daemon` runs `sessiondag daemon start --wait --json`, the one starter
   (sessiondag/cli/daemon_start.py: detached, logging to `<state dir>/daemon.log`, ready when its
   pidfile names a socket that answers, the winner of a start race used). A failure raises
   `DaemonStartError` with the command's own message.
5. A pid is alive when it is a positive integer naming a process that is not a zombie; a socket
   path over 106 bytes is reached through /proc/self/fd/<dir fd>/<name>.

The TypeScript client and the Neovim plugin follow the same rules: all three are checked against
tests/fixtures/discovery.json.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.util
import os
import shutil
import socket as _socket
import stat
import subprocess
import sys
from typing import Iterator, Required, TypedDict, cast

import orjson

PIDFILE = "daemon.pid"
LOGFILE = "daemon.log"


class _DaemonFields(TypedDict, total=False):
    """What a serving daemon writes to its pidfile besides pid and socket (cli/serve.py), each as
    the file holds it: read by whoever needs one, checked there."""
    tcp: object
    token_file: object
    log: object
    state_dir: object
    version: object
    started_at: object


class PidRecord(_DaemonFields, total=False):
    """`<state dir>/daemon.pid` as read_pidfile gives it: `pid` checked (a live process), the rest
    as the file holds it."""
    pid: Required[int]
    socket: object


class DaemonRecord(_DaemonFields, total=False):
    """A daemon that answers (find_daemon, the starter's result): its pidfile record with `socket`
    checked; `daemon start` adds whether it started it and, without --wait, `ready`."""
    pid: Required[int]
    socket: Required[str]
    started: bool
    ready: bool


class StartedDaemon(_DaemonFields, total=False):
    """What `sessiondag daemon start --wait --json` printed (start_daemon): `socket` checked, the
    rest as printed."""
    socket: Required[str]
    pid: object
    started: object
    ready: object


class DaemonNotRunningError(ConnectionRefusedError):
    """No daemon serves the state dir (and auto-start was not asked for)."""

    def __init__(self, state_dir: str, socket: str):
        self.state_dir = state_dir
        self.socket = socket
        super().__init__(f"no sessiondag daemon serves state dir {state_dir} (socket {socket}); "
                         f"start one with: sessiondag daemon start --state-dir {state_dir}")


class DaemonStartError(RuntimeError):
    """An auto-started daemon exited or never became ready; the message is the child's own."""


# --- the wire-level rules, kept here so the client needs no daemon package (a test pins them to
# --- the daemon's own: sessiondag/store/handles.py and sessiondag/rpc/transports.py)
SUN_PATH_MAX = 107


def default_state_dir() -> str:
    home = os.environ.get("SESSIONDAG_HOME")
    if home:
        return os.path.abspath(home)
    xdg = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(xdg, "sessiondag")


def runtime_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR")
    d = os.path.join(base, "sessiondag") if base and os.path.isdir(base) else f"/tmp/sessiondag-{os.getuid()}"
    os.makedirs(d, mode=0o700, exist_ok=True)
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise ConnectionError(f"{d} is not a directory owned by uid {os.getuid()}; refusing to use it")
    return d


def default_socket_path(state_dir: str) -> str:
    key = hashlib.sha256(os.path.realpath(state_dir).encode()).hexdigest()[:16]
    return os.path.join(runtime_dir(), f"sd-{key}.sock")


@contextlib.contextmanager
def short_address(path: str) -> Iterator[str]:
    """An AF_UNIX address for `path` within the kernel's limit (via /proc/self/fd/<dirfd>/<name>)."""
    if len(os.fsencode(path)) <= SUN_PATH_MAX - 1:
        yield path
        return
    parent, name = os.path.split(os.path.abspath(path))
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        short = f"/proc/self/fd/{fd}/{name}"
        if len(os.fsencode(short)) > SUN_PATH_MAX - 1:
            raise OSError(errno.ENAMETOOLONG, f"socket name {name!r} is too long for AF_UNIX", path)
        yield short
    finally:
        os.close(fd)


def state_dir_of(state_dir: str | os.PathLike[str] | None = None) -> str:
    return os.path.abspath(os.fspath(state_dir)) if state_dir else default_state_dir()


def pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its parent) is not alive
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def read_pidfile(state_dir: str) -> PidRecord | None:
    """The live daemon's record for `state_dir`, or None (no file, unreadable, or its pid is gone)."""
    try:
        with open(os.path.join(state_dir, PIDFILE), "rb") as f:
            info = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(info, dict) or not pid_alive(info.get("pid")):
        return None
    return cast(PidRecord, info)   # pid_alive: a positive int; the rest is object


def socket_for(state_dir: str) -> str:
    """Where the daemon of `state_dir` listens: its pidfile's socket, else the default path."""
    info = read_pidfile(state_dir)
    sock = info.get("socket") if info else None
    if isinstance(sock, str):
        return sock
    return default_socket_path(state_dir)


def log_path(state_dir: str) -> str:
    return os.path.join(state_dir, LOGFILE)


def answers(path: str, timeout: float = 1.0) -> bool:
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        with short_address(path) as addr:
            s.connect(addr)
        return True
    except OSError:
        return False
    finally:
        s.close()


def cli_command(*args: str) -> list[str]:
    """`sessiondag …`: this interpreter's daemon package, else the `sessiondag` command on PATH."""
    if importlib.util.find_spec("sessiondag") is not None:
        return [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", *args]
    exe = shutil.which("sessiondag")
    if exe is None:
        raise DaemonStartError("cannot start a daemon: the sessiondag package is not installed here and no "
                               "`sessiondag` command is on PATH")
    return [exe, *args]


def serve_command(*args: str) -> list[str]:
    """`sessiondag serve …` (a private `--stdio` daemon is a transport, spawned by its client)."""
    return cli_command("serve", *args)


def start_daemon(state_dir: str, *, socket: str | None = None, idle_timeout: float | None = None,
                 timeout: float = 20.0, env: dict[str, str] | None = None) -> StartedDaemon:
    """Start (or find) the daemon of `state_dir` the way every client does: run `sessiondag daemon
    start --wait --json` (which detaches it, logs it to `<state dir>/daemon.log` and waits until it
    answers) and return what it prints: {pid, socket, log, started, …}. A failure raises
    DaemonStartError with the command's own message."""
    args = ["daemon", "start", "--wait", "--json", "--state-dir", state_dir, "--timeout", str(timeout)]
    if socket:
        args += ["--socket", socket]
    if idle_timeout:
        args += ["--idle-timeout", str(idle_timeout)]
    cmd = cli_command(*args)
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                           timeout=timeout + 30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DaemonStartError(f"cannot run {cmd[0]} daemon start: {e}") from None
    if r.returncode != 0:
        why = r.stderr.strip().removeprefix("sessiondag daemon start: ") or f"exit status {r.returncode}"
        raise DaemonStartError(why)
    try:
        info = orjson.loads(r.stdout)
    except orjson.JSONDecodeError:
        info = None
    if not isinstance(info, dict) or not isinstance(info.get("socket"), str):
        raise DaemonStartError(f"`sessiondag daemon start` printed no daemon: {r.stdout.strip()[:200]!r}")
    return cast(StartedDaemon, info)   # socket: checked above; the rest is object


def answering(info: PidRecord | None) -> DaemonRecord | None:
    """`info` if it names a socket that answers, else None."""
    sock = info.get("socket") if info else None
    if info and isinstance(sock, str) and answers(sock):
        return cast(DaemonRecord, info)   # socket: checked here
    return None


def find_daemon(state_dir: str | os.PathLike[str] | None = None) -> DaemonRecord | None:
    """The record of a daemon that answers for `state_dir`, or None."""
    return answering(read_pidfile(state_dir_of(state_dir)))

