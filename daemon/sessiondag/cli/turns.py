"""Turns of a session as a person names them: "the last one (it failed)", "turn 3". (The record of a
session moved to another working dir on purpose, a rebind, is store/rebind.py's.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..core.model import ROOT, Call
from .common import UsageError

if TYPE_CHECKING:
    from ..store.session import Session

FAILED = ("error", "cancelled")


def user_turns(s: Session, head_id: str | None = None) -> list[Call]:
    """The ROOT-level user nodes on the branch ending at `head_id` (default HEAD), oldest first."""
    return [c for c in s.get_branch(head_id) if c.role == "user" and c.caller == ROOT and c.predecessor is not None]


def _before(turn: Call) -> str:
    """A user turn's predecessor: never None for a node `user_turns` returned."""
    return cast(str, turn.predecessor)


def user_text(c: Call) -> object:
    return c.output


def retry_last(s: Session) -> tuple[str, object]:
    """(branch_from, content) retrying the last turn of the current branch, which must have failed."""
    turns = user_turns(s)
    if not turns:
        raise UsageError(f"session {s.id} has no turn to retry")
    head = s.get_node(s.head_id)
    if head.status not in FAILED:
        raise UsageError(f"the last turn of session {s.id} did not fail (it ended {head.status}); "
                         f"use --edit N to redo a turn")
    last = turns[-1]
    return _before(last), user_text(last)


def edit_point(s: Session, n: int) -> str:
    """The `branch_from` for redoing turn N (1-based) of the current branch with new text."""
    turns = user_turns(s)
    if not 1 <= n <= len(turns):
        raise UsageError(f"--edit {n}: session {s.id} has {len(turns)} turn(s) on its current branch")
    return _before(turns[n - 1])


def end_of_turn(s: Session, n: int) -> str:
    """The last node of turn N (1-based) of the current branch — where `--branch-from N` and the
    chat's `/fork N` branch off: the node before turn N+1's message, or HEAD for the last turn."""
    turns = user_turns(s)
    if not 1 <= n <= len(turns):
        raise UsageError(f"turn {n}: session {s.id} has {len(turns)} turn(s) on its current branch "
                         f"(the [N] of `sessiondag sessions log`)")
    return _before(turns[n]) if n < len(turns) else s.head_id


def is_turn_number(ref: str) -> bool:
    """A bare number of up to 6 digits names a turn; a longer one is a node id (or its prefix)."""
    return ref.isdigit() and len(ref) <= 6


def resolve_point(s: Session, ref: str) -> str:
    """A node to continue or branch from: turn N (the end of it, the numbering `sessions log`
    shows), else a node id, unique prefix or #SEQ."""
    if is_turn_number(ref):
        return end_of_turn(s, int(ref))
    from .common import resolve_node
    return resolve_node(s, ref)
