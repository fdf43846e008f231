"""Is the file a descriptor holds open still the one at its path? (A session's journal: a
directory deleted, replaced or moved under a writer keeps the descriptor writable, so a record
written there would be durable in a file nobody can reach: store/journal.py asks after each sync.)

One readlink of /proc/self/fd/N, compared with what it said at open: a file unlinked (deleted, or
renamed over by a rotation) reads "… (deleted)", a directory moved away reads its new path. Never a
stat of the file: a stat marks its timestamps as seen, so (multigrain timestamps, Linux 6.13+) the
next write stamps a fine-grained mtime, dirtying the inode, and on ext4 without a journal the next
fdatasync then writes the inode table block too — one more I/O per durable append (the bare
`write + fdatasync` of bench/write_rows.py does not pay it). Without /proc: a stat of the path.
"""

from __future__ import annotations

import os


def fd_path(fd: int) -> str | None:
    """The path /proc says the descriptor `fd` names, None without /proc (or if it already reads
    as deleted: then the stat fallback decides)."""
    try:
        p = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return None if p.endswith(" (deleted)") else p


def still_named(fd: int, opened_as: str | None, path: str, inode: int | None, dev: int | None) -> bool:
    """Does `path` still name the file open as `fd`? `opened_as`: fd_path(fd) at open (None: no
    /proc then); `inode`, `dev`: its identity, for the stat fallback."""
    if opened_as is not None:
        try:
            return os.readlink(f"/proc/self/fd/{fd}") == opened_as
        except OSError:
            pass
    try:
        cur = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return cur.st_ino == inode and cur.st_dev == dev
