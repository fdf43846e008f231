"""A lock that holds across threads and processes: a re-entrant mutex for the threads of this process
plus an exclusive flock on a file for other processes (the kernel drops it when the holder dies).

The session lock (journal.py, on `lock`) and the turn lock (on `turn.lock`) are both this. flock
belongs to an open file description, so two `FlockMutex` objects on one path in one process exclude
each other like two processes do (a re-entry must go through the same object).
"""

from __future__ import annotations

import fcntl
import os
import threading
from typing import Callable, Self


def open_for_lock(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)  # never a planted link


class FlockMutex:
    """Re-entrant within a thread, exclusive across the threads of this process and across processes.

    `keep_open=False`: the lock file is opened by the outermost acquire and closed by the matching
    release. `keep_open=True`: its descriptor stays open between holds (`fd`, e.g. to read and write
    bytes in the lock file) until `close()`; a `close()` while held drops the flock at once (the
    matching release then has nothing to unlock). `opener(path) -> fd` opens the file (default:
    read-write, created 0600)."""

    def __init__(self, path: str, *, keep_open: bool = False, opener: Callable[[str], int] = open_for_lock):
        self.path = path
        self._keep_open = keep_open
        self._opener = opener
        self._mutex = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @property
    def depth(self) -> int:
        """How many holds of the owning thread are open (0: not held). Read it only while holding."""
        return self._depth

    @property
    def fd(self) -> int:
        """The lock file's descriptor, opened if it is not (keep_open only)."""
        if self._fd is None:
            self._fd = self._opener(self.path)
        return self._fd

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock (re-entrant). `blocking=False`: take it only if no other thread of this
        process and no other process holds it, else return False at once."""
        if not self._mutex.acquire(blocking):
            return False
        try:
            if self._depth == 0:
                opened = self._fd is None
                fd = self.fd
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BaseException as e:
                    if opened and not self._keep_open:
                        self._fd = None
                        os.close(fd)
                    if not blocking and isinstance(e, BlockingIOError):
                        self._mutex.release()
                        return False
                    raise
        except BaseException:
            self._mutex.release()
            raise
        self._depth += 1
        return True

    def release(self) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._fd is not None:  # None: closed while held (flock gone with it)
                if self._keep_open:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                else:
                    fd, self._fd = self._fd, None
                    os.close(fd)  # drops the flock
        finally:
            self._mutex.release()

    def close(self) -> None:
        """Close the lock file (dropping the flock if held); the next acquire opens it again."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
