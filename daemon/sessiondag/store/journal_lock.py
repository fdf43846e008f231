"""A journal's lock file: the session lock (flock, see locks.py) and the hint in its first 16 bytes.

The hint is (inode of the journal file, logical end of the log). The journal moves it to cover a
record before writing the record and names a new file in it before installing the file (journal.py
says why that makes one pread enough to notice another process's writes).

The lock file opens read-only on a read-only filesystem (reading and flock still work); a write of
the hint then reopens it for writing through a second descriptor (the flock lives on the first), or
fails with EROFS before anything changed.
"""

from __future__ import annotations

import errno
import os
import struct

from ..core.errors import SessionDeletedError
from .locks import FlockMutex

HINT = struct.Struct("<QQ")     # (inode of the journal file, logical end) in the lock file
NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC  # files of a session are never opened through a planted symlink


class JournalLock:
    def __init__(self, path: str):
        self.path = path
        self._mutex = FlockMutex(path, keep_open=True, opener=self._open)
        self._rw = True                  # False: the lock file could only be opened read-only
        self._hint_fd: int | None = None  # a writable descriptor of the lock file, if the lock's is not

    def _open(self, path: str) -> int:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o600)
            self._rw = True
        except FileNotFoundError:  # O_CREAT: the session directory itself is gone (reset, rm -rf)
            raise SessionDeletedError(os.path.basename(os.path.dirname(path)), "its directory is gone") from None
        except OSError as e:  # a read-only filesystem: reading (and flock) still work
            if e.errno not in (errno.EROFS, errno.EACCES):
                raise
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
            self._rw = False
        return fd

    def acquire(self) -> None:
        """Re-entrant within a thread, exclusive across the threads of this process (a mutex) and
        across processes (flock, dropped by the kernel if the holder dies)."""
        self._mutex.acquire()

    def try_acquire(self) -> bool:
        """Take the session lock only if no other thread and no other process holds it (else False
        at once): for a caller that must not wait, the daemon's event loop."""
        return self._mutex.acquire(blocking=False)

    def release(self) -> None:
        self._mutex.release()  # a lock file closed (reset) under the lock has nothing left to unlock

    @property
    def depth(self) -> int:
        """Open holds of the thread holding the lock (read it while holding)."""
        return self._mutex.depth

    def read_hint(self) -> tuple[int, int]:
        raw = os.pread(self._mutex.fd, HINT.size, 0)
        return HINT.unpack(raw) if len(raw) == HINT.size else (0, 0)

    @property
    def rw(self) -> bool:
        """Is the hint writable without reopening (False: the lock file was opened read-only)?"""
        return self._rw

    def writable(self) -> int:
        """A writable descriptor of the lock file: a second one if the lock's was opened read-only
        (the flock we hold lives on the first); EROFS while the filesystem is still read-only."""
        fd = self._mutex.fd
        if not self._rw:
            self._hint_fd = os.open(self.path, os.O_RDWR | NOFOLLOW)
            self._rw = True
        return self._hint_fd if self._hint_fd is not None else fd

    def write_hint(self, inode: int, end: int) -> None:
        os.pwrite(self.writable(), HINT.pack(inode, end), 0)

    def close(self) -> None:
        """Close the lock file (dropping the flock if held); the next use opens it again."""
        self._mutex.close()
        if self._hint_fd is not None:
            os.close(self._hint_fd)
            self._hint_fd = None
        self._rw = True
