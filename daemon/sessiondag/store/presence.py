"""Who has a session open: a shared flock on `<session>/open.lock` for as long as a process has the
session loaded, so that a reset (or delete) from another process is refused instead of pulling the
directory out from under a daemon that keeps acknowledging writes.

- `OpenMark(path, sid)` takes the shared lock (blocking: a reset in progress finishes first) and
  then checks that the lock file still belongs to the session directory (a reset renames the
  directory away while it holds the exclusive lock): if not, the session is `missing`.
- `exclusive(path, sid)` takes the exclusive lock without waiting; if any other process holds the
  shared lock it raises `SessionBusyError` naming the holders (read from /proc/locks) and, when one of them
  is the daemon serving the state dir, the daemon (from `<state>/daemon.pid`).

flock locks belong to an open file description, so two stores in one process conflict like two
processes do; the kernel drops a dead holder's lock. But a process is not "another process" to
itself: every mark of this process is registered by the file it locks, and `exclusive` first lets
go of this process's other holds on it (`OpenMark.on_reset`: the store that loaded the session
forgets it and tells its listeners it was deleted) before it decides the session is busy.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import weakref
from typing import Callable, Iterator

import orjson

from ..core.errors import SessionBusyError, SessionResumeError

NAME = "open.lock"


def _same_file(fd: int, path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    fst = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)


# (dev, inode) of an open.lock -> {id(mark): weak ref} of this process's marks on it. A mark that is
# garbage collected leaves a dead ref, skipped and dropped later: __del__ (which may run inside any
# allocation, this module's included) never takes the mutex.
_HERE: dict[tuple[int, int], dict[int, "weakref.ref[OpenMark]"]] = {}
_HERE_MUTEX = threading.RLock()


def _key(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class OpenMark:
    def __init__(self, session_path: str, session_id: str):
        self.path = os.path.join(session_path, NAME)
        self.fd: int | None = None
        self.on_reset: Callable[[], None] | None = None  # set by the store: forget the session
        self._key: tuple[int, int] | None = None
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:
            raise SessionResumeError(session_id, "missing") from None
        except OSError as e:  # a read-only filesystem: the session still opens to be read
            if e.errno not in (errno.EROFS, errno.EACCES):
                raise
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                if not os.path.isdir(session_path):
                    raise SessionResumeError(session_id, "missing") from None
                return  # no lock file and none can be made: nobody can reset it either
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if not _same_file(fd, self.path):  # reset while we waited: the directory is gone
                raise SessionResumeError(session_id, "missing", "reset while opening")
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        self._key = _key(fd)
        with _HERE_MUTEX:
            _HERE.setdefault(self._key, {})[id(self)] = weakref.ref(self)

    def close(self) -> None:
        if self.fd is not None:
            assert self._key is not None  # set with fd
            with _HERE_MUTEX:
                marks = _HERE.get(self._key, {})
                marks.pop(id(self), None)
                if not marks:
                    _HERE.pop(self._key, None)
            self._close_fd()

    def _close_fd(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)

    def __del__(self) -> None:  # a store dropped without close() must not block resets until exit
        try:
            self._close_fd()
        except OSError:
            pass


def _held_here(fd: int) -> bool:
    return bool(_marks_here(fd))


def _marks_here(fd: int) -> list["OpenMark"]:
    with _HERE_MUTEX:
        refs = _HERE.get(_key(fd), {})
        marks = [m for m in (r() for r in list(refs.values())) if m is not None and m.fd is not None]
        for k in [k for k, r in refs.items() if r() is None]:
            del refs[k]
    return marks


def _let_go_here(fd: int) -> bool:
    """This process's own holds on the lock file open as `fd`, let go (each store forgets the
    session, its mark closes). True if there were any."""
    marks = _marks_here(fd)
    for mark in marks:
        if mark.on_reset is not None:
            mark.on_reset()
        mark.close()
    return bool(marks)


def holders(path: str) -> list[int]:
    """Pids holding a flock on the file at `path` (from /proc/locks; [] where unavailable)."""
    try:
        st = os.stat(path)
        with open("/proc/locks", "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = set()
    for line in lines:
        parts = line.split()
        if "->" in parts:  # a waiter, not a holder
            continue
        for i, p in enumerate(parts):
            if p == want and i >= 1 and parts[i - 1].isdigit():
                pids.add(int(parts[i - 1]))
    return sorted(pids)


def _daemon_of(state_dir: str, pids: list[int]) -> str:
    try:
        with open(os.path.join(state_dir, "daemon.pid"), "rb") as f:
            info = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return ""
    if not isinstance(info, dict) or info.get("pid") not in pids:
        return ""
    where = " ".join(f"{k}={info[k]}" for k in ("socket", "tcp") if info.get(k))
    return f"the sessiondag daemon (pid {info['pid']}{', ' + where if where else ''})"


def _try_exclusive(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        return False
    return True


@contextlib.contextmanager
def exclusive(session_path: str, session_id: str, state_dir: str, *, take: bool = True) -> Iterator[None]:
    """Hold the session's open lock exclusively (nobody has it open), or raise SessionBusyError.
    This process's own holds are let go first (`take=False`: they are only not counted, and the
    block runs without the lock if they are all there is: a check, not a reset)."""
    path = os.path.join(session_path, NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        if not _try_exclusive(fd):
            if take and _let_go_here(fd) and _try_exclusive(fd):
                pass
            else:
                pids = holders(path)
                others = [p for p in pids if p != os.getpid()] if _held_here(fd) else pids
                if take or others or not pids:
                    raise SessionBusyError(session_id, pids, _daemon_of(state_dir, pids))
        yield
    finally:
        os.close(fd)
