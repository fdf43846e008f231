"""Which line of a session is its main line.

From ROOT, at each fork the main line follows the oldest child: the line that was there first —
unless that child's step failed and a later sibling retried it and succeeded. Then the first such
retry is the main line, so a session whose turn failed and was retried reads, from the main line,
as the conversation that worked (the failed try stays a branch beside it).

- A step is the child and the nodes after it up to the next turn (a ROOT-level user message),
  along the main line's own rule (a failed provider call redone inside the turn does not make the
  turn a failure). It failed when its last node ended `error` or `cancelled`; it succeeded
  when that node `completed` (a retry still running is not chosen yet).
- A sibling retries the oldest child when it has the same role and name and, for a user message,
  the same text (`sessiondag run --retry`, the chat's `/retry`, an editor's retry all send the
  message again from the same point; a provider call redone from the same message is an llm node
  beside the failed one).

Pure: it reads the graph only, so every client sees the same main line.
"""

from __future__ import annotations

from typing import Callable

from .model import ROOT, Call

Children = Callable[[str], list[Call]]   # a node's children on the chat chain (Graph's, summaries left out)
FAILED = frozenset({"error", "cancelled"})


def _starts_turn(c: Call) -> bool:
    return c.role == "user" and c.caller == ROOT and c.predecessor is not None


def _step_end(g: Children, c: Call, memo: dict[str, Call]) -> Call:
    """The last node of the step that starts at `c` (memo: step ends already found, so a walk over
    nested forks stays linear)."""
    start, seen = c, []
    while c.id not in memo:
        seen.append(c.id)
        kids = g(c.id)
        nxt = main_child(g, kids, memo) if kids else None
        if nxt is None or _starts_turn(nxt):
            break
        c = nxt
    end = memo.get(c.id, c)
    for nid in seen:
        memo[nid] = end
    return memo.get(start.id, end)


def _retries(first: Call, other: Call) -> bool:
    return (other.role == first.role and other.name == first.name
            and (first.role != "user" or other.output == first.output))


def main_child(g: Children, kids: list[Call], memo: dict[str, Call] | None = None) -> Call:
    """The child of a fork point that the main line follows (see the module doc)."""
    memo = {} if memo is None else memo
    ordered = sorted(kids, key=lambda k: k.seq)
    first = ordered[0]
    if len(ordered) == 1 or _step_end(g, first, memo).status not in FAILED:
        return first
    for k in ordered[1:]:
        if _retries(first, k) and _step_end(g, k, memo).status == "completed":
            return k
    return first


def main_tip(g: Children) -> str | None:
    """The tip of the main line (None for a session with no conversation yet)."""
    cur, memo = ROOT, dict[str, Call]()
    while True:
        kids = [k for k in g(cur) if k.caller == ROOT or cur != ROOT]
        if not kids:
            return None if cur == ROOT else cur
        cur = main_child(g, kids, memo).id
