"""The durable append log of one session, shared by every process that writes the session.

File format: line 1 is a header `{"journal": <id>, "session": <sid>, "schema": <n>}`; every further
line is one orjson-encoded record terminated by a newline. A record is durable once its line has been
written and fdatasync'd. A line without its newline is a torn write from a killed process: readers
ignore it and the next writer truncates it away (under the lock).

Writers serialize with `flock` on a separate lock file: the kernel drops the lock when its holder
dies, so a killed process can never leave the session stuck.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from typing import Any, Iterator

import orjson

from ..core.errors import SessionDagError


class CorruptJournalError(SessionDagError):
    code = "corrupt"


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` durably: temp file, fsync, rename, fsync the directory."""
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path))


class Journal:
    def __init__(self, path: str, lock_path: str):
        self.path = path
        self.lock_path = lock_path
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._lock_depth = 0
        self.inode: int | None = None
        self.journal_id: str | None = None
        self.header_info: dict[str, Any] = {}
        self.header_len = 0
        self.offset = 0          # bytes of this journal already read into memory
        self._pending = b""      # bytes read past `offset` that did not yet form a full line

    # --- creation ----------------------------------------------------------------------------
    @staticmethod
    def header(journal_id: str, session_id: str, schema: int) -> bytes:
        return orjson.dumps({"journal": journal_id, "session": session_id, "schema": schema}) + b"\n"

    def create(self, journal_id: str, session_id: str, schema: int, records: list[dict[str, Any]] = ()) -> None:
        """Atomically install a fresh journal (used at session creation and at rotation)."""
        data = self.header(journal_id, session_id, schema) + b"".join(orjson.dumps(r) + b"\n" for r in records)
        write_file_atomic(self.path, data)
        self.close_file()

    # --- locking -----------------------------------------------------------------------------
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive, re-entrant (per instance) lock over the session's files."""
        if self._lock_depth == 0:
            if self._lock_fd is None:
                self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        self._lock_depth += 1
        try:
            yield
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    # --- reading -----------------------------------------------------------------------------
    def _open(self) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR)
        try:
            head = os.pread(fd, 4096, 0)
            nl = head.find(b"\n")
            if nl < 0:
                raise CorruptJournalError("journal header is torn or missing")
            try:
                hdr = orjson.loads(head[:nl])
                jid = hdr["journal"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise CorruptJournalError("journal header is not readable") from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.header_info = hdr
        self.inode = os.fstat(fd).st_ino
        self.journal_id = jid
        self.header_len = nl + 1
        self.offset = nl + 1
        self._pending = b""

    def rotated(self) -> bool:
        """True if the file at `path` is no longer the one this instance has open."""
        if self._fd is None:
            return False
        try:
            return os.stat(self.path).st_ino != self.inode
        except FileNotFoundError:
            return True

    def has_news(self) -> bool:
        """Cheap check (one stat) whether another process wrote or rotated the journal."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return True
        return st.st_ino != self.inode or st.st_size != self.offset + len(self._pending)

    def read_header(self) -> dict[str, Any]:
        self._open()
        return self.header_info

    def read_new(self, start: int | None = None) -> list[tuple[int, dict[str, Any]]]:
        """Records appended since the last read, as (end offset, record). Skips a torn tail.

        `start` rewinds to a byte offset first (an offset a git snapshot recorded)."""
        self._open()
        if start is not None:
            if start < self.header_len:
                raise CorruptJournalError(f"snapshot offset {start} lies inside the journal header")
            self.offset, self._pending = start, b""
        pos0 = self.offset + len(self._pending)
        end = os.fstat(self._fd).st_size
        if end < self.offset:
            raise CorruptJournalError(f"journal is shorter ({end}) than what was read ({self.offset})")
        data = self._pending + (os.pread(self._fd, end - pos0, pos0) if end > pos0 else b"")
        out: list[tuple[int, dict[str, Any]]] = []
        pos = 0
        base = self.offset
        loads = orjson.loads
        while True:
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            line = data[pos:nl]
            try:
                rec = loads(line)
            except orjson.JSONDecodeError:
                raise CorruptJournalError(f"journal record at byte {base + pos} is not JSON") from None
            pos = nl + 1
            out.append((base + pos, rec))
        self.offset = base + pos
        self._pending = data[pos:]
        return out

    # --- writing -----------------------------------------------------------------------------
    def append(self, records: list[dict[str, Any]]) -> int:
        """Append records durably; the caller holds the lock and has read everything before.

        Returns the end offset."""
        self._open()
        if self._pending:  # a torn tail from a killed writer: cut it before writing after it
            os.ftruncate(self._fd, self.offset)
            self._pending = b""
        data = b"".join(orjson.dumps(r) + b"\n" for r in records)
        n = os.pwrite(self._fd, data, self.offset)
        if n != len(data):
            os.ftruncate(self._fd, self.offset)
            raise OSError("short write to the session journal")
        os.fdatasync(self._fd)
        self.offset += n
        return self.offset

    def size(self) -> int:
        return os.stat(self.path).st_size

    def close_file(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.inode = None
        self.offset = 0
        self._pending = b""
        self.journal_id = None

    def close(self) -> None:
        self.close_file()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
