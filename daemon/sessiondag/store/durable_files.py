"""Durable whole-file writes: a file is written to a temp name, fsync'd, renamed into place, and its
directory fsync'd, so a crash leaves either the old file or the new one, never a torn one.

`write_file_atomic` is the whole step; `staged_file` splits it for a caller that must act between
the fsync and the rename (the journal writes its hint naming the new file's inode there). Every
whole-file write of the daemon goes through here: session.json, the journal at creation and
rotation, the daemon's pid and token files, a subprocess body's result."""

from __future__ import annotations

import errno
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator


def fsync_path(path: str, *, directory: bool = False) -> None:
    """fsync the file (or, with `directory`, the directory) at `path`, never through a symlink."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """fsync the directory at `path`: the names in it survive a power loss."""
    fsync_path(path, directory=True)


def write_all(fd: int, data: bytes, where: str) -> None:
    """os.write until all of `data` is written; a write that makes no progress is ENOSPC."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.ENOSPC, "No space left on device (short write)", where)
        view = view[n:]


def _create(path: str, mode: int) -> int:
    """A new file at `path` (never through a symlink planted there: O_EXCL | O_NOFOLLOW). A temp
    file of the same name is a killed writer's with this pid and thread: replaced."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, mode)
    except FileExistsError:
        os.unlink(path)
        fd = os.open(path, flags, mode)
    return fd


@dataclass
class StagedFile:
    """The new content, complete and fsync'd under `tmp` beside `path`; `install()` renames it in."""
    path: str
    tmp: str
    inode: int
    installed: bool = False

    def install(self) -> None:
        os.replace(self.tmp, self.path)
        self.installed = True


@contextmanager
def staged_file(path: str, data: bytes, *, mode: int = 0o600, durable: bool = True) -> Iterator[StagedFile]:
    """Write `data` to a temp file beside `path` and fsync it; the block may act, then `install()`
    (if it did not, leaving the block does). Then the directory is fsync'd. On an error nothing is
    installed and the temp file is removed. `durable=False` skips both fsyncs: the file is still
    whole or absent for readers, but a power loss may lose it (for files that do not outlive
    the process that reads them)."""
    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
    staged = None
    try:
        fd = _create(tmp, mode)
        try:
            write_all(fd, data, tmp)
            if durable:
                os.fsync(fd)
            staged = StagedFile(path, tmp, os.fstat(fd).st_ino)
        finally:
            os.close(fd)
        yield staged
        if not staged.installed:
            staged.install()
    except BaseException:  # nothing half-written stays behind
        if staged is None or not staged.installed:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    if durable:
        fsync_dir(os.path.dirname(path) or ".")


def write_file_atomic(path: str, data: bytes, *, mode: int = 0o600, durable: bool = True) -> None:
    """Write `data` to `path` durably: temp file, fsync, rename, fsync the directory."""
    with staged_file(path, data, mode=mode, durable=durable):
        pass
