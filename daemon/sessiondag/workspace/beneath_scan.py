"""`Beneath.scan`: directory listings for a walker that reads as it goes (workspace/snapshot.py).

`walk` yields paths; a snapshot also needs each entry's lstat (its stat cache compares them), the
directory open while it reads the files in it, and to choose which subdirectories to enter (the
ignore rules prune whole trees). A `Listing` gives all three: `rel` (the directory's path from the
root, b"" for the root), `entries` [(name, lstat result)], `open(name)` / `readlink(name)` for an
entry of it, and `enter`, the names of its subdirectories the caller appends to descend into.
Each subdirectory is opened from its parent's descriptor with O_NOFOLLOW | O_DIRECTORY, so a
directory swapped for a symlink is skipped, never followed; the listing's descriptor is valid until
the generator moves on (it closes every descriptor it opened, also when the caller stops early).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Iterator

DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass
class Listing:
    rel: bytes
    fd: int
    entries: list[tuple[bytes, os.stat_result]]
    enter: list[bytes] = field(default_factory=list)

    def open(self, name: bytes) -> int:
        """A descriptor on the entry `name` (never through a symlink; O_NONBLOCK: a FIFO does not
        block). The caller fstat()s it: it may have changed since the listing."""
        return os.open(name, FILE, dir_fd=self.fd)

    def readlink(self, name: bytes) -> bytes:
        return os.readlink(name, dir_fd=self.fd)


def _listing(fd: int, names: Iterable[bytes] | None) -> list[tuple[bytes, os.stat_result]]:
    out = []
    if names is not None:
        for name in names:
            try:
                out.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
            except (FileNotFoundError, NotADirectoryError):
                continue
        return out
    with os.scandir(fd) as it:
        for de in it:
            try:
                out.append((os.fsencode(de.name), de.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue        # gone meanwhile
    return out


def scan(top_fd: int, rel: bytes, names: Iterable[bytes] | None = None) -> Iterator[Listing]:
    """Listings from the directory open as `top_fd` (path `rel`; the caller keeps `top_fd`), depth
    first; `names`: the top listing holds only these entries (a path marked dirty)."""
    stack: list[tuple[int, bytes]] = [(os.dup(top_fd), rel)]
    try:
        first = True
        while stack:
            fd, here = stack.pop()
            try:
                lst = Listing(here, fd, _listing(fd, names if first else None))
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
