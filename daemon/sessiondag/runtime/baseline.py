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

The Session owns its baseline (`session.baseline`, set and cleared under the session lock), and
closing the session (or its store) closes it first (`close`): what a finished turn owes is
settled — the snapshot finished, recorded, then the owed snapshots, so a caller that never waits
still gets the cancelled first turn's checkpoint — and a baseline only a still-running turn waits
for is stopped at its next file (that turn cannot commit through a closed session: it gets
SessionClosedError), nothing recorded, the next turn after a reopen takes one again. Either way no
thread of it outlives the session. If the process dies first, nothing is recorded either.

Its life is one state (`Phase`): TAKING (the thread reads the files; STOPPING once a close asked
it to stop at its next file), TAKEN (nobody records it yet), RECORDING (one settle records it, then
the snapshots owed), SETTLED (nothing left unless a turn owes one more), CLOSED (nothing more is
recorded by anyone).

Waits do not poll: each waiter has a SimpleQueue that the snapshot's end, a settle's end and the
turn's cancel (Runtime.on_cancel, also from a signal handler: SimpleQueue.put is reentrant) put a
wake-up into.
"""

from __future__ import annotations

import enum
import logging
import threading
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..core.checkpoint import BASELINE_KEY
from ..store import checkpoints

if TYPE_CHECKING:
    from ..store.session import Session
    from .writer import SessionWriter

log = logging.getLogger(__name__)


class Cancellable(Protocol):
    """What a waiting turn passes (the Runtime): its cancel wakes the wait and stops it."""

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]: ...

    def check_cancelled(self) -> None: ...


class Phase(enum.Enum):
    TAKING = "taking"           # the thread takes the snapshot
    STOPPING = "stopping"       # ... and stops at its next file (a close with nothing owed)
    TAKEN = "taken"             # taken, stopped or failed; nobody records it yet
    RECORDING = "recording"     # one settle records it, then the snapshots owed
    SETTLED = "settled"         # recorded, failed or given up: only a snapshot owed later is left
    CLOSED = "closed"           # the session closes: nothing more is recorded


class Baseline:
    def __init__(self, session: Session):
        self.session = session
        self.taken: tuple[str | None, dict[str, Any]] | None = None   # None: stopped, nothing to record
        self._state = threading.Lock()      # guards what follows; never held while waiting or writing
        self._phase = Phase.TAKING
        self._closing = False               # close() runs: a settle that ends meanwhile leaves the session's slot to it
        self._owed: list[tuple[SessionWriter, str]] = []     # (writer, user node) of turns that did not wait
        self._waiters: set[SimpleQueue[None]] = set()
        self._thread = threading.Thread(target=self._run, name=f"baseline-{session.id}", daemon=True)
        self._behind: threading.Thread | None = None   # the thread settling for turns that did not wait

    @classmethod
    def start(cls, session: Session) -> "Baseline | None":
        """The session's baseline under way (the one an earlier turn left unsettled, or a new one),
        or None when it has one already or no checkpoints."""
        with session.lock:
            held = session.baseline   # only a Baseline is ever put there (start, owe)
            if isinstance(held, Baseline):
                return held
            if session.snapshots is None or BASELINE_KEY in session.graph.extra:
                return None
            b = session.baseline = cls(session)
            b._thread.start()      # under the lock: a close sees it started (and joins it)
        return b

    @staticmethod
    def under_way(session: Session) -> "Baseline | None":
        b = session.baseline
        return b if isinstance(b, Baseline) else None

    def _run(self) -> None:
        s = self.session
        try:
            self.taken = checkpoints.take(s, s.settings().pack_compression, lock=s.lock.locked,
                                          stopped=self._stopping)
        except checkpoints.SnapshotStopped:
            self.taken = None
        except Exception as e:  # noqa: BLE001 - reported like a failed snapshot; the turn goes on
            self.taken = (None, {"error": f"{type(e).__name__}: {e}"[:500]})
        finally:
            with self._state:
                self._phase = Phase.TAKEN
            self._wake()

    def _stopping(self) -> bool:
        return self._phase is Phase.STOPPING    # one read: no lock needed

    def _wake(self) -> None:
        with self._state:
            waiters = list(self._waiters)
        for q in waiters:
            q.put(None)

    def _claim(self, waiter: Cancellable | None) -> Phase | None:
        """Wait until no snapshot is taken and nobody records; then, if this thread is to record
        (the phase is RECORDING now), the phase it found (TAKEN: the snapshot is not recorded yet;
        SETTLED: only snapshots owed are), else None: nothing is left to do. A cancel of `waiter`
        raises."""
        q: SimpleQueue[None] = SimpleQueue()
        unhook = waiter.on_cancel(lambda: q.put(None)) if waiter is not None else None
        with self._state:
            self._waiters.add(q)
        try:
            while True:
                with self._state:
                    found = self._phase
                    if found is Phase.TAKEN or (found is Phase.SETTLED and self._owed):
                        self._phase = Phase.RECORDING
                        return found
                    if found in (Phase.SETTLED, Phase.CLOSED):
                        return None
                if waiter is not None:
                    waiter.check_cancelled()
                q.get()
        finally:
            with self._state:
                self._waiters.discard(q)
            if unhook is not None:
                unhook()

    def settle(self, waiter: Cancellable | None = None) -> None:
        """Wait for the snapshot and record it (once), then the snapshots owed by turns that did
        not wait. `waiter`: the waiting turn's runtime (its cancel stops the wait: RunCancelled).
        The caller may hold the turn lock, not the session lock: the snapshot's writes take it."""
        found = self._claim(waiter)
        if found is None:
            return
        try:
            if found is Phase.TAKEN:
                self._record()
            while True:
                with self._state:
                    if not self._owed:
                        break
                    w, opener = self._owed.pop(0)
                w.commit_turn(checkpoint=True, opener=opener)
        finally:
            with self._state:
                self._phase = Phase.SETTLED     # also when recording failed: the next turn tries again
                done = not self._owed
                closing = self._closing
            self._wake()
            if done and not closing:
                self._detach()

    def _detach(self) -> None:
        s = self.session
        with s.lock:
            if s.baseline is self:
                s.baseline = None

    def _record(self) -> None:
        if self.taken is None:
            return          # stopped: the next turn tries again (no baseline recorded)
        ck, meta = self.taken
        if ck is None:
            return          # failed: the next turn tries again
        with self.session.lock:
            if BASELINE_KEY not in self.session.graph.extra:
                self.session.record_checkpoint(BASELINE_KEY, taken=(ck, meta))

    def owe(self, writer: SessionWriter, opener: str) -> None:
        """The turn of `opener` ended before a tool ran and does not wait: its own snapshot is
        taken and recorded after the baseline, in the background."""
        with self._state:
            self._owed.append((writer, opener))
        s = self.session
        with s.lock:
            if s.baseline is None:
                s.baseline = self   # settled meanwhile: the session's close must see this work
        self._behind = threading.Thread(target=settle_quietly, args=(self,), name=f"baseline-owed-{opener}",
                                        daemon=True)
        self._behind.start()

    def close(self) -> None:
        """The session closes (Session.close, before it marks itself closed): settle what a finished
        turn owes, else stop the snapshot; return once no thread of it is left (see the module doc)."""
        with self._state:
            owed = bool(self._owed)
            if not owed and self._phase is Phase.TAKING:
                self._phase = Phase.STOPPING
        self._thread.join()
        if owed:
            settle_quietly(self)
        with self._state:
            self._closing = True
        self._claim(None)     # a settle under way finishes first
        with self._state:     # then nothing more is recorded by anyone
            self._phase = Phase.CLOSED
            self._owed.clear()
        self._wake()
        behind = self._behind
        if behind is not None and behind is not threading.current_thread():
            behind.join()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the background work (tests)."""
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
