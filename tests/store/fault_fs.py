"""Real filesystem faults for the store tests: a small tmpfs mounted for one test, filled up,
remounted read-only. Tests run as root here; mounting needs it (a clear failure otherwise)."""

from __future__ import annotations

import errno
import os
import subprocess
from contextlib import contextmanager
from typing import Iterator


def _mount(*args: str) -> None:
    r = subprocess.run(["mount", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mount {' '.join(args)} failed (these tests need root to mount a tmpfs): "
                           f"{r.stderr.strip()}")


@contextmanager
def small_tmpfs(path: str | os.PathLike, size: str = "4m") -> Iterator[str]:
    """A tmpfs of `size` mounted at `path` for the block; unmounted in any case."""
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", path)
    try:
        yield path
    finally:
        subprocess.run(["mount", "-o", "remount,rw", path], capture_output=True)
        r = subprocess.run(["umount", path], capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["umount", "-l", path], capture_output=True)


class Filler:
    """Fills a filesystem to the last byte with one file, and frees it again."""

    def __init__(self, mount: str):
        self.path = os.path.join(mount, "filler")

    def fill(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            block = b"\xff" * (64 << 10)
            while True:
                try:
                    if os.write(fd, block) < len(block):
                        block = block[: max(1, len(block) // 2)]
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    if len(block) == 1:
                        return
                    block = block[: len(block) // 2]
        finally:
            os.close(fd)

    def free(self) -> None:
        if os.path.exists(self.path):
            os.unlink(self.path)


def remount(path: str, mode: str) -> None:
    """`mode` is "ro" or "rw". A read-only remount needs no file open for writing on it."""
    _mount("-o", f"remount,{mode}", path)
