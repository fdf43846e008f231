"""The snapshot before a session's first turn, taken beside the turn instead of before it
(docs/checkpoints.md "Off the turn's path").

The first snapshot of a big working dir reads every file (seconds on 10,000 files). `Baseline.start`
runs it in a thread of its own while the turn goes on — its user node, the render, the first model
call — with the session lock held only while it writes packs and trees. `settle()` waits for it
and records it (session meta `checkpoints.baseline`, in a commit of its own); the loop calls it
before the turn's first tool call (a tool may change the files) and before the turn's commit, so
nothing the turn does reaches the files before their starting state is known. What another
process changes meanwhile lands in the baseline or in the turn's own snapshot, as with any
snapshot taken while someone edits.

A turn that ends before any tool ran (cancelled, or failed) does not wait: it commits its nodes and
`owe`s its own snapshot, which a thread takes once the baseline is recorded (`settle` does both, so
the next turn — which adopts the baseline still under way — runs no tool before either is done).
If the process ends first, nothing is recorded: the next turn takes a baseline again, and the
cancelled turn's node says it has no checkpoint.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Callable

from ..core.checkpoint import BASELINE_KEY
from ..store import checkpoints

log = logging.getLogger(__name__)
POLL_S = 0.05    # how often a wait for the baseline looks whether its turn was cancelled

_under_way: "weakref.WeakKeyDictionary[Any, Baseline]" = weakref.WeakKeyDictionary()  # session -> baseline
_registry = threading.Lock()


class Baseline:
    def __init__(self, session: Any):
        self.session = session
        self.taken: tuple[str | None, dict[str, Any]] | None = None
        self._settled = False
        self._settling = threading.Lock()
        self._owed: list[tuple[Any, str]] = []     # (writer, user node) of turns that did not wait
        self._thread = threading.Thread(target=self._run, name=f"baseline-{session.id}", daemon=True)
        self._behind: threading.Thread | None = None   # the thread settling for turns that did not wait

    @classmethod
    def start(cls, session: Any) -> "Baseline | None":
        """A baseline under way for `session` (the one an earlier turn left unsettled, or a new
        one), or None when it has one already or no checkpoints."""
        with _registry:
            b = _under_way.get(session)
            if b is not None:
                return b
        with session.lock:
            if session.snapshots is None or BASELINE_KEY in session.graph.extra:
                return None
        b = cls(session)
        with _registry:
            _under_way[session] = b
        b._thread.start()
        return b

    @staticmethod
    def under_way(session: Any) -> "Baseline | None":
        with _registry:
            return _under_way.get(session)

    def _run(self) -> None:
        s = self.session
        try:
            self.taken = checkpoints.take(s, s.settings().pack_compression, lock=s.lock.locked)
        except Exception as e:  # noqa: BLE001 - reported like a failed snapshot; the turn goes on
            self.taken = (None, {"error": f"{type(e).__name__}: {e}"[:500]})

    def settle(self, check: Callable[[], None] | None = None) -> None:
        """Wait for the snapshot and record it (once), then the snapshots owed by turns that did
        not wait. `check` is called while waiting (it raises to stop the wait: a cancel). The
        caller may hold the turn lock, not the session lock: the snapshot's writes take it."""
        while not self._settling.acquire(timeout=POLL_S):   # another thread settles: wait for it
            if check is not None:
                check()
        try:
            if not self._settled:
                while self._thread.is_alive():
                    self._thread.join(POLL_S)
                    if check is not None and self._thread.is_alive():
                        check()
                self._settled = True
                self._record()
            while self._owed:
                w, opener = self._owed.pop(0)
                w.commit_turn(checkpoint=True, opener=opener)
        finally:
            if self._settled and not self._owed:
                with _registry:
                    if _under_way.get(self.session) is self:
                        del _under_way[self.session]
            self._settling.release()

    def _record(self) -> None:
        taken = self.taken
        if taken is None or taken[0] is None:
            return          # failed: the next turn tries again (no baseline recorded)
        with self.session.lock:
            if BASELINE_KEY not in self.session.graph.extra:
                self.session.record_checkpoint(BASELINE_KEY, taken=taken)

    def owe(self, writer: Any, opener: str) -> None:
        """The turn of `opener` ended before a tool ran and does not wait: its own snapshot is
        taken and recorded after the baseline, in the background."""
        self._owed.append((writer, opener))
        self._behind = threading.Thread(target=settle_quietly, args=(self,), name=f"baseline-owed-{opener}",
                                        daemon=True)
        self._behind.start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the background work (tests, and a caller that must not leave it behind)."""
        for t in (self._thread, self._behind):
            if t is not None:
                t.join(timeout)
        behind = self._behind
        return not self._thread.is_alive() and (behind is None or not behind.is_alive())


def settle_quietly(b: Baseline) -> None:
    """settle() at the end of a turn: a failure to record the baseline is logged, never in the way
    of the turn's own commit (the next turn tries again)."""
    try:
        b.settle()
    except Exception as e:  # noqa: BLE001 - the turn's nodes must still be committed
        log.warning("recording the snapshot before the first turn of %s failed: %s", b.session.id, e)


def finish(session: Any) -> None:
    """A process about to exit that ran `session`'s turns (an in-process `sessiondag run`): wait
    for the snapshots a first turn that did not wait left to a thread, so its node has its
    checkpoint like any committed turn. A second signal still stops the process at once."""
    b = Baseline.under_way(session)
    if b is not None:
        b.join()
