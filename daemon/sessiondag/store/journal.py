"""The durable append log of one session, shared by every process that writes the session.

The file's bytes (a header line, one orjson line per record, zero padding; a torn tail) are
store/journal_format.py's. A record is durable once its line has been written and fdatasync'd, and
acknowledged only if the file is still the one at the journal's path (store/open_file.py).

Writers serialize with `flock` on a separate lock file: the kernel drops the lock when its holder
dies, so a killed process can never leave the session stuck. The lock file's first 16 bytes hold a
hint (journal inode, logical end). A writer moves it to cover its record *before* writing the record,
and a rotation names the new file in it before installing the file; so the hint always covers the
log. Other processes read it (one pread, no lock) to notice new records; under the lock a writer
whose hint matches what it has read skips the catch-up probe, and until it lets the lock go (nobody
else can write meanwhile) it reads the hint no more: `_held_hint` is what the hint holds, kept by its
own writes. A hint that claims more than the log holds (its writer died before the write) only costs a
full check.
"""

from __future__ import annotations

import errno
import os
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import orjson

from ..core.errors import SessionDeletedError
from .durable_files import staged_file
from .journal_format import CHUNK, PROBE, CorruptJournalError, header, lines, padded
from .journal_lock import NOFOLLOW, JournalLock
from .open_file import fd_path, still_named

__all__ = ["CHUNK", "PROBE", "CorruptJournalError", "Journal", "padded"]  # the format's names, as before
# after a commit, a journal larger than the setting store.journal_rotate_bytes (4 MiB) is rotated


class Journal:
    def __init__(self, path: str, lock_path: str):
        self.path = path
        self.lock_path = lock_path
        self._fd: int | None = None
        self._lock = JournalLock(lock_path)
        self._fd_rw = True        # False: the journal could only be opened read-only
        self._defer = 0           # > 0 inside group_sync
        self._unsynced = False    # appended bytes not yet fdatasync'd (only inside group_sync)
        self._group_start: int | None = None  # where the records not yet fdatasync'd begin
        self.inode: int | None = None
        self._dev: int | None = None  # with `inode`: the identity of the file open (at_path)
        self._fd_path: str | None = None  # what /proc/self/fd/N named at open (_still_named)
        self._fd_link: str | None = None  # that /proc/self/fd/N (None without /proc): append's presence check
        self.journal_id: str | None = None
        self.header_info: dict[str, Any] = {}
        self.header_len = 0
        self.offset = 0          # bytes of this journal already read into memory (whole lines)
        self._pending = b""      # bytes read past `offset` that did not yet form a full line
        self._file_size = 0      # physical size (zero-padded) as last seen by this instance
        self._tail_checked = False
        self._held_hint: tuple[int, int] | None = None  # the hint, as in_sync found it under this hold of the lock
        self.presence_checks = 0  # after-sync checks that the file is still at its path (write_queue.py)

    # --- creation ----------------------------------------------------------------------------

    def create(self, journal_id: str, session_id: str, schema: int, records: Sequence[dict[str, Any]] = ()) -> None:
        """Atomically install a fresh journal (at session creation and at rotation, under the lock).

        The hint names the new file before the rename makes it visible: a writer that finds the
        hint naming its own file knows the journal was not rotated (see `in_sync`)."""
        self._sync_pending()  # inside a group: its records are made durable in the old file first
        self._held_hint = None     # the hint is about to name another file
        data = header(journal_id, session_id, schema) + lines(records)
        old_hint = self._lock.read_hint() if os.path.exists(self.lock_path) else None
        with staged_file(self.path, data + bytes(padded(len(data)) - len(data))) as staged:
            self._lock.write_hint(staged.inode, len(data))
            try:
                staged.install()
            except BaseException:  # nothing installed: the old journal (if any) stays, and so does its hint
                if old_hint is not None:
                    try:
                        self._lock.write_hint(*old_hint)
                    except OSError:
                        pass
                raise
        self.close_file()

    # --- locking and the hint (journal_lock.py) -----------------------------------------------
    def _writable(self) -> None:
        """Before a write: descriptors opened read-only (the filesystem was read-only then) are
        reopened for writing, or the write fails here with EROFS before anything changed."""
        self._lock.writable()
        if self._fd is not None and not self._fd_rw:
            fd = os.open(self.path, os.O_RDWR | NOFOLLOW)
            try:
                if os.fstat(fd).st_ino != self.inode:
                    raise CorruptJournalError("the journal was replaced while it was open read-only")
                os.dup2(fd, self._fd)
            finally:
                os.close(fd)
            self._fd_rw = True

    def acquire(self) -> None:
        """Take the session lock (see JournalLock.acquire)."""
        self._lock.acquire()

    def try_acquire(self) -> bool:
        """Take the session lock if nobody else holds it, else False at once (JournalLock.try_acquire)."""
        return self._lock.try_acquire()

    def release(self) -> None:
        if self._lock.depth == 1:  # the last hold: other processes may write from now on
            self._held_hint = None
        self._lock.release()

    # `with journal:` is the session lock (reusable, unlike a generator context manager)
    def __enter__(self) -> "Journal":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def locked(self) -> "Journal":
        """`with journal.locked():` is `with journal:` (no generator frame per hold)."""
        return self

    # --- reading -----------------------------------------------------------------------------
    def _open(self) -> tuple[int, int]:
        """Open the journal if it is not open yet; returns its descriptor and inode."""
        if self._fd is not None and self.inode is not None:  # set (and cleared) together
            return self._fd, self.inode
        rw = True
        try:
            fd = os.open(self.path, os.O_RDWR | NOFOLLOW)  # a planted symlink fails here (ELOOP)
        except OSError as e:  # a read-only filesystem: open for reading, writes reopen (_writable)
            if e.errno not in (errno.EROFS, errno.EACCES):
                raise
            fd, rw = os.open(self.path, os.O_RDONLY | NOFOLLOW), False
        try:
            head = os.pread(fd, 4096, 0)
            nl = head.find(b"\n")
            if nl < 0 or b"\0" in head[:nl]:
                raise CorruptJournalError("journal header is torn or missing")
            try:
                hdr = orjson.loads(head[:nl])
                jid = hdr["journal"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise CorruptJournalError("journal header is not readable") from None
            st = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._fd_path = fd_path(fd)
        self._fd_link = None if self._fd_path is None else f"/proc/self/fd/{fd}"
        self._fd_rw = rw
        self.header_info = hdr
        self.inode = st.st_ino
        self._dev = st.st_dev
        self._file_size = st.st_size
        self.journal_id = jid
        self.header_len = nl + 1
        self.offset = nl + 1
        self._pending = b""
        self._tail_checked = False
        return fd, st.st_ino

    def rotated(self) -> bool:
        """True if the file at `path` is no longer the one this instance has open."""
        if self._fd is None:
            return False
        return not self._still_named()

    def has_news(self) -> bool:
        """Cheap check (one pread of the hint, no lock) whether another process wrote or rotated."""
        if self._fd is None:
            return True
        here = (self.inode, self.offset + len(self._pending))
        if self._held_hint == here:  # this process holds the lock, and found the hint so under it
            return False
        return self._lock.read_hint() != here

    def in_sync(self) -> bool:
        """Under the lock: True if nobody appended or rotated since this instance last read.

        Sound because every writer moves the hint to cover its record *before* writing it, and a
        rotation names the new file in the hint before installing it: a log that grew or was
        replaced always shows in the hint. (A stale hint only costs a full check.)"""
        if self._fd is None:
            return False
        here = (self.inode, self.offset + len(self._pending))
        if self._held_hint == here:  # read under this hold already, moved by our own writes only
            return True
        if self._lock.read_hint() != here:
            return False
        self._held_hint = here
        return True

    def read_header(self) -> dict[str, Any]:
        self._open()
        return self.header_info

    def _read_to_end(self, fd: int, pos: int) -> bytes:
        """The log bytes from `pos` up to its logical end (the first NUL, or the end of file)."""
        out = []
        want = PROBE
        while True:
            chunk = os.pread(fd, want, pos)
            z = chunk.find(b"\0")
            if z >= 0:
                out.append(chunk[:z])
                break
            out.append(chunk)
            if len(chunk) < want:
                break
            pos += len(chunk)
            want = min(want * 4, CHUNK)  # a long catch-up (or a cold replay) reads in big steps
        return b"".join(out)

    def read_new(self, start: int | None = None) -> list[tuple[int, dict[str, Any]]]:
        """Records appended since the last read, as (end offset, record). Skips a torn tail.

        `start` rewinds to a byte offset first (an offset a git snapshot recorded)."""
        fd, _ = self._open()
        if start is not None:
            if start < self.header_len:
                raise CorruptJournalError(f"snapshot offset {start} lies inside the journal header")
            size = os.fstat(fd).st_size
            if start > size or (start > self.header_len and os.pread(fd, 1, start - 1) != b"\n"):
                raise CorruptJournalError(f"journal ends before the snapshot's offset {start} (size {size})")
            self.offset, self._pending = start, b""
        pos0 = self.offset + len(self._pending)
        new = self._read_to_end(fd, pos0)
        if not new:
            return []
        data = self._pending + new
        out: list[tuple[int, dict[str, Any]]] = []
        pos = 0
        base = self.offset
        loads = orjson.loads
        while True:
            nl = data.find(b"\n", pos)
            if nl < 0:
                break
            try:
                rec = loads(data[pos:nl])
            except orjson.JSONDecodeError:
                self.offset, self._pending = base + pos, data[pos:]  # the next read starts there again
                raise CorruptJournalError(f"journal record at byte {base + pos} is not JSON", base + pos, out) from None
            pos = nl + 1
            out.append((base + pos, rec))
        self.offset = base + pos
        self._pending = data[pos:]
        return out

    # --- writing -----------------------------------------------------------------------------
    def _scrub_tail(self, fd: int) -> None:
        """Zero whatever lies past the logical end (bytes a power loss left behind a hole), once
        per open file, so a later append can never run into them. Caller holds the lock."""
        end = self.offset + len(self._pending)
        size = os.fstat(fd).st_size
        self._file_size = size
        if size > end:
            rest = os.pread(fd, size - end, end)
            if rest.count(0) != len(rest):
                os.pwrite(fd, bytes(len(rest)), end)
        self._tail_checked = True

    def append(self, records: list[dict[str, Any]]) -> int:
        """Append records durably; the caller holds the lock and has read everything before.

        Returns the new logical end."""
        fd, inode = self._open()
        if not self._fd_rw or not self._lock.rw:
            self._writable()
        if not self._tail_checked:
            self._scrub_tail(fd)
        data = lines(records)
        at = self.offset
        end = at + len(data)
        buf = data
        torn = len(self._pending)
        if torn:  # a torn fragment from a killed writer: overwrite every byte of it
            if torn > len(data):
                buf = data + bytes(torn - len(data))
            self._pending = b""
        if end >= self._file_size:  # grow: write the zero padding in the same call (one fdatasync)
            grow = padded(end) - at - len(buf)
            buf = buf + bytes(max(grow, 0))
        written = 0
        try:
            self._write_hint(inode, end)  # first: the hint always covers every record written
            written = os.pwrite(fd, buf, at)
            if written != len(buf):  # the filesystem ran out of room part way
                raise OSError(errno.ENOSPC, "No space left on device (short write)", self.path)
            if not self._defer:
                os.fdatasync(fd)
                link = self._fd_link  # _check_present's answer when the path names the file (one readlink)
                if link is not None and os.readlink(link) == self._fd_path:
                    self.presence_checks += 1
                else:
                    self._check_present()
        except BaseException:
            self._undo(fd, inode, at, max(written, torn))
            raise
        if self._defer:
            self._unsynced = True
            if self._group_start is None:
                self._group_start = at
        self._file_size = max(self._file_size, at + len(buf))
        self.offset = end
        return end

    def _undo(self, fd: int, inode: int, at: int, length: int) -> None:
        """A write that failed (no space, I/O error, read-only): zero whatever of it reached the
        file and move the hint back, so no reader (in this or another process) ever sees a record
        nobody was told about, and the next append starts at `at` again. Best effort: if even
        this fails, the bytes are an unacknowledged tail the next writer overwrites."""
        try:
            if length:
                os.pwrite(fd, bytes(length), at)
            self._write_hint(inode, at)
        except OSError:
            self._held_hint = None  # the hint may say either: read it again
        self.offset = at
        self._pending = b""

    def _write_hint(self, inode: int, end: int) -> None:
        """Move the hint; a hold that found it in sync keeps knowing what it says."""
        held = self._held_hint
        self._held_hint = None
        self._lock.write_hint(inode, end)
        if held is not None:
            self._held_hint = (inode, end)

    def at_path(self) -> bool:
        """Is the file this journal holds open still the one at its path (True before it is opened)?
        Under the lock a rotation cannot have replaced it, so False means: deleted or replaced."""
        if self._fd is None:
            return os.path.exists(self.path)
        return self._still_named()

    def _still_named(self) -> bool:
        """Does the path still name the open file (store/open_file.py: never a stat of it)?"""
        fd = self._fd
        return fd is not None and still_named(fd, self._fd_path, self.path, self.inode, self._dev)

    def _check_present(self) -> None:
        """After an fdatasync: a session directory deleted (or replaced) under us keeps our
        descriptor writable, so the record is durable in a file nobody can reach: raise
        `session_deleted` instead of acknowledging it."""
        if not self.at_path():
            sid = self.header_info.get("session", "") if isinstance(self.header_info, dict) else ""
            raise SessionDeletedError(str(sid), "its directory was removed or replaced while open")
        self.presence_checks += 1

    @contextmanager
    def group_sync(self) -> Iterator[None]:
        """Group commit: inside the block (the caller holds the lock) appends skip their own
        fdatasync and one fdatasync at the end makes them all durable. The caller must acknowledge
        none of them before the block has ended."""
        self._defer += 1
        try:
            yield
        finally:
            self._defer -= 1
            if self._defer == 0:
                self._sync_pending()

    def _sync_pending(self) -> None:
        try:
            fd, inode = self._fd, self.inode
            if self._unsynced and fd is not None and inode is not None:  # set (and cleared) together
                try:
                    os.fdatasync(fd)
                    self._check_present()
                except BaseException:  # none of the group is durable (or reachable): unwrite all of it
                    if self._group_start is not None:
                        self._undo(fd, inode, self._group_start, self.offset - self._group_start)
                    raise
        finally:
            self._unsynced = False
            self._group_start = None

    def size(self) -> int:
        """The log's logical size (bytes of header and records read so far)."""
        return self.offset

    def close_file(self) -> None:
        self._sync_pending()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._fd_link = None
        self.inode = None
        self.offset = 0
        self._pending = b""
        self.journal_id = None
        self._tail_checked = False
        self._held_hint = None

    def close(self) -> None:
        self.close_file()
        self._held_hint = None
        self._lock.close()
