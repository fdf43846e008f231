"""Pausing the cyclic garbage collector around bulk builds, shared by every thread of the process.

Opening a session (store/snapshot.py) and building a render memo (context/prefix.py) allocate one
long-lived object per node and create no reference cycles; the cyclic GC would rescan the growing
heap again and again while they run. `gc_paused()` turns it off for the duration.

The collector is process-wide state, so the pause is reference-counted: the first pauser (any
thread) records whether the collector was on and turns it off, the last one to leave turns it back
on only if it was on before and nobody turned it on meanwhile. A library caller that runs with the
collector disabled finds it disabled afterwards; one that had it on finds it on. (A `gc.disable()`
by someone else while a pause is held cannot be told from the pause itself: it is undone when the
last pauser leaves if the collector was on before the first one came.)

When the last pauser turns the collector back on, what the pause built is moved to the oldest
generation first (`promote_young`): otherwise the very next young collection scans every object
the pause allocated, the next middle one scans them again, and only then do they age — ~20 % of
the CPU of a cold 100k-node render (bench/read_rows.py) went to rescanning the memo just built.
The objects are long-lived by construction (a loaded graph, a render memo); any cyclic garbage
among them waits for the next full collection, as old objects' does.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_pausers = 0
_was_enabled = False


def pausers() -> int:
    """How many pauses are held right now (all threads)."""
    return _pausers


def _enter() -> None:
    global _pausers, _was_enabled
    with _lock:
        if _pausers == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pausers += 1


def promote_young() -> None:
    """Move every tracked object to the oldest generation without scanning it (gc.freeze, then
    gc.unfreeze). Not while anyone keeps objects frozen on purpose (cli/view.py): unfreezing would
    undo that."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _leave() -> None:
    global _pausers
    with _lock:
        _pausers -= 1
        if _pausers == 0 and _was_enabled:
            promote_young()
            gc.enable()


@contextmanager
def gc_paused(when: bool = True) -> Iterator[None]:
    """Hold the collector off inside the block (re-entrant, across threads); `when=False` is a
    no-op, for callers that pause only for large jobs."""
    if not when:
        yield
        return
    _enter()
    try:
        yield
    finally:
        _leave()
