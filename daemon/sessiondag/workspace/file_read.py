"""Reading a working dir's file for a snapshot (workspace/snapshot.py), from a descriptor opened
through workspace/beneath.py: whole (`read_all`, for a file within the size limit) or hashed as it is
read without being held (`stream_hash`, the git blob id of a file over the limit, however big)."""

from __future__ import annotations

import hashlib
import os

CHUNK = 1 << 20


def read_all(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    n = 0
    while True:
        b = os.read(fd, max(CHUNK, size - n + 1))
        if not b:
            return b"".join(parts)
        parts.append(b)
        n += len(b)


def stream_hash(fd: int, size: int) -> tuple[str, int]:
    """(git blob id, size) of a file read in chunks, as big as it may be: hashed as it is read (the
    header needs the size first: the stat's), never held in memory whole. A file that turns out
    another size meanwhile is read again from its start (held this time: it is being written)."""
    h = hashlib.sha1(b"blob %d\0" % size)
    n = 0
    while n <= size:
        b = os.read(fd, CHUNK)
        if not b:
            break
        h.update(b)
        n += len(b)
    if n == size:
        return h.hexdigest(), n
    os.lseek(fd, 0, os.SEEK_SET)
    parts: list[bytes] = []
    n = 0
    while True:
        b = os.read(fd, CHUNK)
        if not b:
            break
        parts.append(b)
        n += len(b)
        if n > size:  # growing while we read: hash what we read
            break
    h = hashlib.sha1(b"blob %d\0" % n)
    for b in parts:
        h.update(b)
    return h.hexdigest(), n
