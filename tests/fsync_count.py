"""Counting fsync and fdatasync calls — the store's and dulwich's all go through `os.fsync` /
`os.fdatasync` — for the tests that bound them (tests/store/test_snapshot_sync.py) and for
bench/write_rows.py's fsyncs-per-commit row: one counter, so the two count the same thing."""

from __future__ import annotations

import os
from typing import Any, Callable


class FsyncCount:
    """`n`: the fsync and fdatasync calls made since `count_fsyncs` installed the counter."""

    def __init__(self) -> None:
        self.n = 0


def count_fsyncs(setattr_: Callable[[Any, str, Any], None] = setattr) -> FsyncCount:
    """Wrap os.fsync and os.fdatasync so that every call is counted; returns the counter.
    `setattr_`: how to install the wrappers (a test passes `monkeypatch.setattr`, which undoes
    them afterwards; a bench child, which only counts, the plain setattr)."""
    count = FsyncCount()
    real_fsync, real_fdatasync = os.fsync, os.fdatasync

    def fsync(fd: Any) -> None:
        count.n += 1
        return real_fsync(fd)

    def fdatasync(fd: Any) -> None:
        count.n += 1
        return real_fdatasync(fd)
    setattr_(os, "fsync", fsync)
    setattr_(os, "fdatasync", fdatasync)
    return count
