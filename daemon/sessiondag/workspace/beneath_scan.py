"""`Beneath.scan`: directory listings for a walker that reads as it goes (workspace/snapshot.py).

`walk` yields paths; a snapshot also needs each entry's lstat (its stat cache compares them), the
directory open while it reads the files in it, and to choose which subdirectories to enter (the
ignore rules prune whole trees). A `Listing` gives all three: `rel` (the directory's path from the
root, b"" for the root), `entries` {name: lstat result} (for a subdirectory of a full listing only
`DIR_STAT`, whose `st_mode` says directory: the kernel's entry type tells it, without an lstat of
its own; read at its first use), `open(name)` / `readlink(name)` for an entry of it, and `enter`, the names of its subdirectories the caller appends to descend into.
Each subdirectory is opened from its parent's descriptor with O_NOFOLLOW | O_DIRECTORY, so a
directory swapped for a symlink is skipped, never followed; the listing's descriptor is valid until
the generator moves on (it closes every descriptor it opened, also when the caller stops early).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Generator, Iterable

DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_ENCODING = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())   # what os.fsencode does
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class Listing:
    __slots__ = ("rel", "fd", "enter", "_entries")

    def __init__(self, rel: bytes, fd: int, entries: dict[bytes, os.stat_result] | None = None):
        self.rel, self.fd, self._entries = rel, fd, entries
        self.enter: list[bytes] = []

    @property
    def entries(self) -> dict[bytes, os.stat_result]:
        """name -> its lstat (DIR_STAT for a subdirectory); the directory is read at the first
        use (a walker that knows the names already need not read it: workspace/listings.py)."""
        if self._entries is None:
            self._entries = _listing(self.fd, None)
        return self._entries

    def open(self, name: bytes) -> int:
        """A descriptor on the entry `name` (never through a symlink; O_NONBLOCK: a FIFO does not
        block). The caller fstat()s it: it may have changed since the listing."""
        return os.open(name, FILE, dir_fd=self.fd)

    def readlink(self, name: bytes) -> bytes:
        return os.readlink(name, dir_fd=self.fd)


DIR_STAT = os.stat_result((stat.S_IFDIR, 0, 0, 0, 0, 0, 0, 0, 0, 0))
"""What a full listing says of a subdirectory: that it is one (its st_mode; the walker enters it or
not). One object, told apart by identity; its other fields say nothing."""


def _listing(fd: int, names: Iterable[bytes] | None) -> dict[bytes, os.stat_result]:
    out: dict[bytes, os.stat_result] = {}
    if names is not None:
        for name in names:
            try:
                out[name] = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                continue
        return out
    enc = _ENCODING    # per entry: a name encoded in C, one lstat (the walk's hot loop)
    with os.scandir(fd) as it:
        for de in it:
            try:
                out[de.name.encode(*enc)] = DIR_STAT if de.is_dir(follow_symlinks=False) else \
                    de.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue        # gone meanwhile
    return out


def scan(top_fd: int, rel: bytes, names: Iterable[bytes] | None = None) -> Generator[Listing, None, None]:
    """Listings from the directory open as `top_fd` (path `rel`; the caller keeps `top_fd`), depth
    first; `names`: the top listing holds only these entries (a path marked dirty)."""
    stack: list[tuple[int, bytes]] = [(os.dup(top_fd), rel)]
    try:
        first = True
        while stack:
            fd, here = stack.pop()
            try:
                lst = Listing(here, fd, _listing(fd, names) if first and names is not None else None)
                first = False
                yield lst
                for name in reversed(lst.enter):
                    try:
                        stack.append((os.open(name, DIR, dir_fd=fd), here + b"/" + name if here else name))
                    except OSError:
                        continue    # gone, or a symlink now: nothing to enter
            finally:
                os.close(fd)
    finally:
        for fd, _ in stack:
            os.close(fd)
