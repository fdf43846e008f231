"""The branch tips of a session kept as nodes arrive, for the live document (live.py): the same list
`Graph.list_branches` gives (document.py `branches`), without walking every node each time — that
walk (it validates every chain) takes a third of a second at 100k nodes.

A tip is a chain node (not a compaction summary) with no chain child but summaries: a new chain
node is a tip and its predecessor stops being one. Whether a tip is on a sub-agent's branch is
read from the layout (its row's segment, or one it leaves from, starts with a spawn edge); the main line's tip is
core/main_line.py's, over the chain children the graph indexes.
"""

from __future__ import annotations

from typing import Callable

from ..core import main_line
from ..core.graph import SUMMARY_NAME, Graph
from ..context.ledger import UsageTotals
from ..core.model import ROOT, Call
from .layout import EDGE_SPAWN, Layout
from .page_types import BranchEntry
from .redact import Redactor


class Tips:
    def __init__(self, head_ids: list[str]):
        self.ids: dict[str, None] = dict.fromkeys(head_ids)     # in seq order
        self.spawned: list[bool] = []                            # per segment: on a sub-agent's branch

    def add(self, g: Graph, c: Call) -> None:
        """Node `c` (the newest) was appended."""
        if c.id == ROOT or not g.is_chain_node(c) or c.name == SUMMARY_NAME:
            return
        if c.predecessor is not None:
            self.ids.pop(c.predecessor, None)
        self.ids[c.id] = None

    def branches(self, g: Graph, lay: Layout, red: Redactor, usage_of: Callable[[str], UsageTotals] | None,
                 exact_limit: int) -> list[BranchEntry]:
        """document.py `branches` of the tips kept."""
        main = main_line.main_tip(lambda nid: [g.nodes[k] for k in g.children_by_predecessor(nid)
                                               if g.nodes[k].name != SUMMARY_NAME])
        exact = usage_of is not None and len(self.ids) <= exact_limit
        for seg in lay.segments[len(self.spawned):]:     # a segment's edges never change: once each
            self.spawned.append(seg.edge == EDGE_SPAWN or (seg.parent_row >= 0 and
                                                           self.spawned[lay.seg_of[seg.parent_row]]))
        out: list[BranchEntry] = []
        for tip in self.ids:
            c = g.nodes[tip]
            row = lay.rep.get(tip, -1)
            name = g.branch_names.get(tip)
            d: BranchEntry = {"row": row, "head_id": tip, "name": red.text(name) if name else None, "main": tip == main,
                 "current": tip == g.head_id, "spawn": row >= 0 and self.spawned[lay.seg_of[row]], "status": c.status}
            if exact and usage_of is not None:
                d["usage"] = usage_of(tip)
            out.append(d)
        return out

