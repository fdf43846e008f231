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
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..core.checkpoint import BASELINE_KEY
from ..store import checkpoints

log = logging.getLogger(__name__)


class Baseline:
    def __init__(self, session: Any):
        self.session = session
        self.taken: tuple[str | None, dict[str, Any]] | None = None
        self._settled = False
        self._thread = threading.Thread(target=self._run, name=f"baseline-{session.id}", daemon=True)

    @classmethod
    def start(cls, session: Any) -> "Baseline | None":
        """A baseline under way for `session`, or None when it has one already or no checkpoints."""
        with session.lock:
            if session.snapshots is None or BASELINE_KEY in session.graph.extra:
                return None
        b = cls(session)
        b._thread.start()
        return b

    def _run(self) -> None:
        s = self.session
        try:
            self.taken = checkpoints.take(s, s.settings().pack_compression, lock=s.lock.locked)
        except Exception as e:  # noqa: BLE001 - reported like a failed snapshot; the turn goes on
            self.taken = (None, {"error": f"{type(e).__name__}: {e}"[:500]})

    def settle(self) -> None:
        """Wait for the snapshot and record it (once; the caller may hold the turn lock, not the
        session lock: the snapshot's writes take it)."""
        if self._settled:
            return
        self._settled = True
        self._thread.join()
        taken = self.taken
        if taken is None or taken[0] is None:
            return          # failed: the next turn tries again (no baseline recorded)
        with self.session.lock:
            if BASELINE_KEY not in self.session.graph.extra:
                self.session.record_checkpoint(BASELINE_KEY, taken=taken)


def settle_quietly(b: Baseline) -> None:
    """settle() at the end of a turn: a failure to record the baseline is logged, never in the way
    of the turn's own commit (the next turn tries again)."""
    try:
        b.settle()
    except Exception as e:  # noqa: BLE001 - the turn's nodes must still be committed
        log.warning("recording the snapshot before the first turn of %s failed: %s", b.session.id, e)
