"""Where a daemon listens: the private runtime dir, Unix socket paths, the state-dir lock, the token,
and the stdio streams (every transport is then served by the one read loop, connection.py).

AF_UNIX paths are limited to ~107 bytes. A longer path is bound and connected through
`/proc/self/fd/<dirfd>/<name>` (Linux), which keeps the real directory but a short address.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import os
import secrets
import socket
import stat
import sys
import time
from typing import Iterator

import orjson

from ..store.durable_files import write_file_atomic

SUN_PATH_MAX = 107
LISTEN_BACKLOG = 1024  # many clients connecting at once (the kernel caps it at net.core.somaxconn)


async def stdio_streams(limit: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Protocol streams on the original stdin/stdout; fd 1 is pointed at stderr so stray prints
    can never corrupt the JSON-RPC stream."""
    loop = asyncio.get_running_loop()
    in_fd, out_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    fin, fout = os.fdopen(in_fd, "rb", 0), os.fdopen(out_fd, "wb", 0)
    reader = asyncio.StreamReader(limit=limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), fin)
    wt, wp = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, fout)
    return reader, asyncio.StreamWriter(wt, wp, reader, loop)


class TransportError(Exception):
    """A transport cannot be set up; the message says why and what to do."""


def runtime_dir() -> str:
    """The 0700 per-user runtime dir: $XDG_RUNTIME_DIR/sessiondag, else /tmp/sessiondag-<uid>."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    d = os.path.join(base, "sessiondag") if base and os.path.isdir(base) else f"/tmp/sessiondag-{os.getuid()}"
    ensure_private_dir(d)
    return d


def ensure_private_dir(d: str) -> str:
    os.makedirs(d, mode=0o700, exist_ok=True)
    st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise TransportError(f"{d} is not a directory owned by uid {os.getuid()}; refusing to use it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(d, 0o700)
    return d


def state_key(state_dir: str) -> str:
    return hashlib.sha256(os.path.realpath(state_dir).encode()).hexdigest()[:16]


def default_socket_path(state_dir: str) -> str:
    """One default socket per state dir, so clients find the daemon that serves theirs."""
    return os.path.join(runtime_dir(), f"sd-{state_key(state_dir)}.sock")


def default_token_path(state_dir: str) -> str:
    return os.path.join(runtime_dir(), f"sd-{state_key(state_dir)}.token")


@contextlib.contextmanager
def short_address(path: str) -> Iterator[str]:
    """An AF_UNIX address for `path` that fits the kernel limit."""
    if len(os.fsencode(path)) <= SUN_PATH_MAX - 1:
        yield path
        return
    parent, name = os.path.split(os.path.abspath(path))
    if not os.path.isdir("/proc/self/fd"):
        raise TransportError(f"socket path {path!r} is longer than the {SUN_PATH_MAX}-byte AF_UNIX limit; "
                             f"pass a shorter --socket PATH or set XDG_RUNTIME_DIR to a short directory")
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        short = f"/proc/self/fd/{fd}/{name}"
        if len(short) > SUN_PATH_MAX - 1:
            raise TransportError(f"socket name {name!r} is too long for AF_UNIX")
        yield short
    finally:
        os.close(fd)


def connect_unix(path: str, timeout: float | None = None) -> socket.socket:
    """Connect; with a timeout, a full accept backlog (EAGAIN) is retried until the timeout."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.001
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if timeout is not None:
                s.settimeout(timeout)
            with short_address(path) as addr:
                s.connect(addr)
            s.settimeout(None)
            return s
        except BlockingIOError:
            s.close()
            if deadline is None or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        except BaseException:
            s.close()
            raise


def bind_unix(path: str) -> socket.socket:
    """A listening socket at `path` (mode 0600); a stale socket file is removed, a live one refused."""
    if os.path.exists(path) or os.path.islink(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise TransportError(f"{path} exists and is not a socket; refusing to replace it")
        try:
            connect_unix(path, timeout=1.0).close()
        except OSError:
            os.unlink(path)  # stale: nobody answers
        else:
            raise TransportError(f"another daemon is listening on {path}")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        with short_address(path) as addr:
            s.bind(addr)
        os.chmod(path, 0o600)
        s.listen(LISTEN_BACKLOG)
        s.setblocking(False)
        return s
    except BaseException:
        s.close()
        raise
    finally:
        os.umask(old)


def check_loopback(host: str) -> str:
    if host in ("localhost", "127.0.0.1", "::1") or host.startswith("127."):
        return host
    raise TransportError(f"--tcp binds loopback only (127.0.0.1 or ::1), not {host!r}")


def write_token(path: str) -> str:
    token = secrets.token_urlsafe(32)
    write_file_atomic(path, (token + "\n").encode(), mode=0o600)
    return token


class StateDirLock:
    """One serving daemon per state dir: flock on `daemon.lock` plus a pidfile describing it."""

    def __init__(self, state_dir: str):
        self.lock_path = os.path.join(state_dir, "daemon.lock")
        self.pid_path = os.path.join(state_dir, "daemon.pid")
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)  # no planted link
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            info = self.read()
            where = " ".join(f"{k}={v}" for k, v in info.items() if k in ("pid", "socket", "tcp")) or "unknown"
            raise TransportError(f"another sessiondag daemon already serves state dir "
                                 f"{os.path.dirname(self.lock_path)} ({where}); connect to it or stop it first") from None
        self.fd = fd

    def write(self, info: dict[str, object]) -> None:
        write_file_atomic(self.pid_path, orjson.dumps({"pid": os.getpid(), **info}), mode=0o644)

    def read(self) -> dict[str, object]:
        try:
            with open(self.pid_path, "rb") as f:
                d = orjson.loads(f.read())
            return d if isinstance(d, dict) else {}
        except (OSError, orjson.JSONDecodeError):
            return {}

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.pid_path)
        os.close(self.fd)
        self.fd = None
