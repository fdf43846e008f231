"""Durable whole-file writes: a file is written to a temp name, fsync'd, renamed into place, and its
directory fsync'd, so a crash leaves either the old file or the new one, never a torn one."""

from __future__ import annotations

import errno
import os


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomic(path: str, data: bytes) -> None:
    """Write `data` to `path` durably: temp file, fsync, rename, fsync the directory."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "No space left on device (short write)", tmp)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:  # nothing half-written stays behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(os.path.dirname(path))
