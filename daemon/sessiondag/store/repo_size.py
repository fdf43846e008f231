"""The size of a session repository on disk, for the workspace budget and `sessions show`
(docs/checkpoints.md "Where it is stored")."""

from __future__ import annotations

import os
import time
from contextlib import suppress

_loose: dict[str, tuple[float, int]] = {}   # git dir -> (when, bytes) of its loose objects, last measured
MEASURE_LOOSE_EVERY_S = 30.0


def repo_bytes_now(git_dir: str) -> int:
    """The repository's bytes for the budget check: the packs (a listing of one directory) every
    time, the loose objects (a walk of up to 256 directories; at most 64 files, store/packs.py)
    at most every MEASURE_LOOSE_EVERY_S."""
    now = time.monotonic()
    last = _loose.get(git_dir)
    if last is None or now - last[0] > MEASURE_LOOSE_EVERY_S:
        last = _loose[git_dir] = (now, repo_bytes(git_dir) - _dir_bytes(os.path.join(git_dir, "objects", "pack")))
    return last[1] + _dir_bytes(os.path.join(git_dir, "objects", "pack"))


def _dir_bytes(d: str) -> int:
    total = 0
    with suppress(OSError):
        with os.scandir(d) as it:
            for e in it:
                with suppress(OSError):
                    total += e.stat(follow_symlinks=False).st_size
    return total


def repo_bytes(git_dir: str) -> int:
    """Bytes of the session repository's objects (packs and loose)."""
    total = 0
    for d, _, names in os.walk(os.path.join(git_dir, "objects")):
        for n in names:
            with suppress(OSError):
                total += os.lstat(os.path.join(d, n)).st_size
    return total
