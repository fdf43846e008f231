"""Turns: the one lock per session that serializes them, and what a turn returns.

`turn_lock(w)` is taken by every user turn (`loop.run_turn`) and by a sub-agent's follow-up turn
(subagents.py), so the two never interleave on one session. `TurnResult` is what `run_turn` returns.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from ..store.locks import FlockMutex
from .writer import SessionWriter

if TYPE_CHECKING:
    from ..store.session import Session


class TurnLock(FlockMutex):
    """The one lock per session that serializes turns — user turns and sub-agent follow-ups, across
    threads (a re-entrant mutex) and across processes (flock on `Session.turn_lock_path`, dropped by
    the kernel if the holder dies): a CLI run and a daemon turn on one session take turns too."""

    def try_acquire(self) -> bool:
        """Take the lock unless a turn holds it in another thread or process (False at once); the
        thread running a turn takes it again (a fork that restores its files first)."""
        return self.acquire(blocking=False)


_turn_locks: "weakref.WeakValueDictionary[str, TurnLock]" = weakref.WeakValueDictionary()  # alive while in use
_turn_locks_guard = threading.Lock()


def turn_lock(w: SessionWriter) -> TurnLock:
    """The session's TurnLock (one per session directory in this process)."""
    return session_turn_lock(w.session)


def session_turn_lock(session: Session) -> TurnLock:
    """The TurnLock of a store Session (`turn_lock` for one behind a SessionWriter)."""
    with _turn_locks_guard:
        lock = _turn_locks.get(session.path)
        if lock is None:
            lock = _turn_locks[session.path] = TurnLock(session.turn_lock_path)
        return lock


def turn_locks_alive() -> int:
    """How many sessions' turn locks are in use in this process (daemon/status `tables.turn_locks`)."""
    with _turn_locks_guard:
        return len(_turn_locks)


@dataclass
class TurnResult:
    session_id: str
    head_id: str
    stop_reason: str                 # end_turn | max_steps | error | cancelled
    text: str = ""
    user_node_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: Mapping[str, object] | None = None
    node_ids: list[str] = field(default_factory=list)

    @property
    def usage(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    def to_dict(self) -> dict[str, object]:
        return {"session_id": self.session_id, "head_id": self.head_id, "stop_reason": self.stop_reason,
                "usage": self.usage, "text": self.text, "user_node_id": self.user_node_id,
                "error": self.error}
