"""The daemon's file-descriptor budget: how many fds it may use before it must close idle sessions.

Each loaded session holds a few fds (journal, lock file, open lock, git packs); each client holds one.
The daemon keeps `reserve` fds free at all times so that a new client can always connect and ping
and a turn commit can open its pack files. The soft RLIMIT_NOFILE is raised to the hard limit at
start (capped), as most servers do.
"""

from __future__ import annotations

import os
import resource

RAISE_CAP = 1 << 16


def raise_soft_limit() -> int:
    """Raise the soft fd limit to the hard one (at most RAISE_CAP); returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else RAISE_CAP
    want = min(want, RAISE_CAP)
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft


def fd_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def fds_open() -> int:
    """How many fds this process has open right now (one listdir of /proc/self/fd)."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # minus the listdir's own fd
    except OSError:
        return 0


def default_reserve(limit: int) -> int:
    """Fds kept free: enough for a burst of new clients and a commit, at least 32, ≤ a quarter."""
    return max(32, min(256, limit // 8)) if limit >= 128 else max(8, limit // 4)
