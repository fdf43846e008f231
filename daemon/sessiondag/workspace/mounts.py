"""Whether a working directory's file system keeps the promise listing reuse rests on (listings.py).

A warm walk reuses a directory's listing while the directory's (mtime_ns, ctime_ns, inode) are
unchanged. That holds only where every create, unlink or rename in a directory moves its mtime and
ctime, at nanosecond granularity, as this host sees it. It does not hold on FAT/exFAT (2 s mtime, a
ctime that is the creation time), nor on network and user-space file systems (NFS, SMB/CIFS, FUSE,
9p), which cache attributes so another client's new file need not show in the directory's stat.
git, likewise, turns its untracked cache on only after testing the file system.

So reuse is decided per working directory from the mount table (/proc/self/mountinfo): the mount
holding the real path of the directory (the longest mount point that is a prefix of it; the last
such line when mounts are stacked) and every mount beneath it (a walk enters them) must all be of a
type in LOCAL_FS. Anything else, an unreadable table or a line that does not parse included, means
no reuse: the walk reads every directory, which is always correct.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

LOCAL_FS = frozenset({b"ext2", b"ext3", b"ext4", b"xfs", b"btrfs", b"tmpfs", b"f2fs", b"zfs",
                      b"bcachefs", b"overlay"})
"""Local file systems whose directory mtime/ctime move on every entry change, with ns granularity."""

MOUNTINFO = "/proc/self/mountinfo"

_ESCAPE = re.compile(rb"\\([0-7]{3})")


class Mount(NamedTuple):
    point: bytes    # the mount point, unescaped
    fstype: bytes   # e.g. b"ext4", b"fuse.sshfs", b"nfs4"


class MountinfoError(ValueError):
    """A mountinfo line that does not have the documented shape (proc(5))."""


def unescape(field: bytes) -> bytes:
    """The kernel writes space, tab, newline and backslash in a path as \\040, \\011, \\012, \\134."""
    return _ESCAPE.sub(lambda m: bytes([int(m.group(1), 8) & 0xFF]), field)


def parse(text: bytes) -> list[Mount]:
    """Each line: id parent major:minor root point options [optional...] - fstype source superopts.
    Raises MountinfoError on a line without that shape."""
    out = []
    for line in text.split(b"\n"):
        if not line.strip():
            continue
        fields = line.split(b" ")
        try:
            sep = fields.index(b"-", 6)
        except ValueError:
            raise MountinfoError(f"mountinfo line without its separator: {line[:200]!r}") from None
        if sep + 1 >= len(fields) or not fields[sep + 1] or not fields[4].startswith(b"/"):
            raise MountinfoError(f"mountinfo line without a mount point or type: {line[:200]!r}")
        out.append(Mount(unescape(fields[4]), fields[sep + 1]))
    return out


def _under(path: bytes, point: bytes) -> bool:
    return point == b"/" or path == point or path.startswith(point.rstrip(b"/") + b"/")


def mounts_for(path: bytes, mounts: list[Mount]) -> list[Mount]:
    """The mount holding `path` (an absolute real path) and the mounts beneath it; [] when none holds it."""
    holder: Mount | None = None
    for m in mounts:   # table order: a later mount on the same point covers an earlier one
        if _under(path, m.point) and (holder is None or len(m.point) >= len(holder.point)):
            holder = m
    if holder is None:
        return []
    return [holder] + [m for m in mounts if m.point != path and _under(m.point, path)]


def listings_safe(root: str, mountinfo: bytes | None = None) -> bool:
    """True when every directory a walk of `root` enters is on a file system in LOCAL_FS.
    `mountinfo`: the table's text (default: read MOUNTINFO now); unreadable or malformed: False."""
    try:
        if mountinfo is None:
            with open(MOUNTINFO, "rb") as f:
                mountinfo = f.read()
        found = mounts_for(os.fsencode(os.path.realpath(root)), parse(mountinfo))
    except (OSError, MountinfoError):
        return False
    return bool(found) and all(m.fstype in LOCAL_FS for m in found)
