"""The one ref of a session's repository (refs/heads/main): moved by each turn commit, reset after
a power loss (store/snapshot_sync.py). Everything here runs under the session lock."""

from __future__ import annotations

import errno
import os
import re
from typing import TYPE_CHECKING, cast

from dulwich.refs import HEADREF

from .durable_files import fsync_dir, write_file_atomic
from .node_index import CorruptSnapshotError

if TYPE_CHECKING:
    from dulwich.objects import ObjectID
    from dulwich.refs import Ref
    from dulwich.repo import Repo

_LOOSE = re.compile(rb"[0-9a-f]{40}\n")


def move(repo: Repo, path: str, ref: Ref, old: bytes | None, new: bytes, in_place: bool) -> None:
    """Move `ref` (a loose ref at `path`) from `old` to `new`. `in_place`: overwrite its 41 bytes
    where they are (or create it, for the first commit), unsynced (a rename over the old file
    would make ext4 flush it; the sync point makes it durable). Otherwise, or when it is no loose file (packed by `git gc`), through
    dulwich: lock file, fsync, rename."""
    lock = path + ".lock"  # git's own temp name: never taken for a ref
    if os.path.lexists(lock):  # the caller holds the session lock: this one is stale (killed writer)
        os.unlink(lock)
    if in_place and old is None and not os.path.lexists(path):  # a session's first commit
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            try:
                os.write(fd, new + b"\n")
            finally:
                os.close(fd)
            os.link(lock, path)  # no rename over anything: nothing is there
        finally:
            os.unlink(lock)
        return
    if in_place and old is not None:
        try:
            rfd: int | None = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            rfd = None
        if rfd is not None:
            fd = rfd
            try:
                if os.pread(fd, 64, 0) != old + b"\n":
                    raise CorruptSnapshotError(f"{ref.decode()} moved under the session lock")
                line = new + b"\n"
                if os.pwrite(fd, line, 0) != len(line):
                    raise OSError(errno.EIO, "short write of the ref", path)
            finally:
                os.close(fd)
            return
    if not repo.refs.set_if_equals(ref, cast("ObjectID | None", old), cast("ObjectID", new)):  # hex ids
        raise CorruptSnapshotError(f"{ref.decode()} moved under the session lock")
    if old is None:
        repo.refs.set_symbolic_ref(HEADREF, ref)


def read_loose(path: str) -> bytes | None:
    """The commit id (40 hex digits) a plain loose ref file at `path` holds: one open and read,
    none of dulwich's ref machinery (a turn commit reads the ref once). None for anything else —
    missing, packed by `git gc`, symbolic, a symlink, damaged: the caller asks dulwich."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 64)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data[:40] if len(data) == 41 and _LOOSE.fullmatch(data) else None


def text(path: str) -> str:
    """The ref's content as it is on disk (for messages; never raises)."""
    try:
        with open(path, "rb") as f:
            return f.read(64).strip().decode("ascii", "replace") or "(empty)"
    except OSError as e:
        return f"({e.strerror})"


def reset(path: str, sha: bytes | None) -> None:
    """Point the ref at `sha` (None: remove it) durably, whatever it holds now."""
    if sha is None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        fsync_dir(os.path.dirname(path))
    else:
        write_file_atomic(path, sha + b"\n", mode=0o644)
