"""Turns of a session as a person names them: "the last one (it failed)", "turn 3". (The record of a
session moved to another working dir on purpose, a rebind, is store/rebind.py's.)"""

from __future__ import annotations

from typing import Any

from ..core.model import ROOT
from .common import UsageError

FAILED = ("error", "cancelled")


def user_turns(s: Any, head_id: str | None = None) -> list[Any]:
    """The ROOT-level user nodes on the branch ending at `head_id` (default HEAD), oldest first."""
    return [c for c in s.get_branch(head_id) if c.role == "user" and c.caller == ROOT and c.predecessor is not None]


def user_text(c: Any) -> Any:
    return c.output


def retry_last(s: Any) -> tuple[str, Any]:
    """(branch_from, content) retrying the last turn of the current branch, which must have failed."""
    turns = user_turns(s)
    if not turns:
        raise UsageError(f"session {s.id} has no turn to retry")
    head = s.get_node(s.head_id)
    if head.status not in FAILED:
        raise UsageError(f"the last turn of session {s.id} did not fail (it ended {head.status}); "
                         f"use --edit N to redo a turn")
    last = turns[-1]
    return last.predecessor, user_text(last)


def edit_point(s: Any, n: int) -> str:
    """The `branch_from` for redoing turn N (1-based) of the current branch with new text."""
    turns = user_turns(s)
    if not 1 <= n <= len(turns):
        raise UsageError(f"--edit {n}: session {s.id} has {len(turns)} turn(s) on its current branch")
    return turns[n - 1].predecessor
