"""Reading a branch a page at a time: windows of the linear history from a branch's start to a head.

Cursors are node ids on the branch (opaque to clients: pass back the `next_cursor` a page returned).
`after=X` keeps the nodes strictly after X (toward the head), `before=X` those strictly before X
(toward the start); both bound a window. `order="asc"` reads the window from its start, `"desc"`
from its head end (newest first). A page holds at most `limit` nodes; `next_cursor` is the id of its
last node when the window holds more in that direction (the next page passes it as `after` for asc,
`before` for desc), else None. A cursor that is no node, or a node off this branch, raises
`InvalidCursorError`.

A node's ancestors never change, so the index keeps the last walked branch (start → tip) and each
node's position, and extends it from the newest node it shares with a new head instead of walking
again: a page costs O(limit) once the head is indexed, a whole branch one list slice.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidCursorError
from .graph import Graph
from .model import ROOT, Call

ORDERS = ("asc", "desc")


@dataclass(frozen=True, slots=True)
class BranchPage:
    nodes: list[Call]          # in the requested order
    head_id: str               # the head the page was cut from (pin it for the next pages)
    next_cursor: str | None    # pass as `after` (asc) / `before` (desc) for the next page
    total: int                 # nodes on the whole branch


class BranchIndex:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.spine: list[Call] = []
        self.pos: dict[str, int] = {}

    def length(self, head_id: str) -> int:
        """Index the branch ending at `head_id`; its length (same walk rules and errors as
        Graph.get_branch)."""
        if head_id == ROOT:
            return 0
        pos = self.pos
        at = pos.get(head_id)
        if at is not None:
            return at + 1
        g = self.graph
        node: Call | None = g.get(head_id)
        new: list[Call] = []
        while node is not None and node.id not in pos:
            new.append(node)
            node = g.step_back(node)
        keep = 0 if node is None else pos[node.id] + 1
        spine = self.spine
        for c in spine[keep:]:
            del pos[c.id]
        del spine[keep:]
        for c in reversed(new):
            pos[c.id] = len(spine)
            spine.append(c)
        return len(spine)

    def page(self, head_id: str, *, limit: int | None = None, before: str | None = None,
             after: str | None = None, order: str = "asc") -> BranchPage:
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}")
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1")
        n = self.length(head_id)
        lo, hi = 0, n
        if after is not None:
            lo = self._where(after, head_id, n) + 1
        if before is not None:
            hi = self._where(before, head_id, n)
        if lo > hi:
            raise InvalidCursorError(before or "", f"'before' precedes 'after' {after!r} on the branch")
        spine = self.spine
        if order == "asc":
            end = hi if limit is None else min(hi, lo + limit)
            nodes = spine[lo:end]
            more = end < hi
        else:
            start = lo if limit is None else max(lo, hi - limit)
            nodes = spine[start:hi]
            nodes.reverse()
            more = start > lo
        return BranchPage(nodes, head_id, nodes[-1].id if more and nodes else None, n)

    def _where(self, cursor: str, head_id: str, n: int) -> int:
        at = self.pos.get(cursor)
        if at is None or at >= n:
            why = "no such node" if cursor not in self.graph.nodes else f"not on the branch of {head_id!r}"
            raise InvalidCursorError(cursor, why)
        return at
