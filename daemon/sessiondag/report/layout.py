"""The picture of a session's DAG: which nodes are rows, how rows hang together, lanes.

A *row* is a node that stands in the chat by itself: a user or llm chain node, a compaction
summary, a sub-agent's spawn root, a chain code node that is no tool call. Everything else folds
into a row (`rep`): a tool call into the model call that asked for it, an ask_user answer and a
function's nested calls into their caller's row, `context/*` machinery into its predecessor's row.
Rows are in seq order (time runs down the picture).

Edges: a row's `parent` is the row of its predecessor (chat order); a spawn root's parent is the row
whose tool call spawned it (a dashed edge). A *segment* is a run of rows that continues by first
children: a fork, a retry, an edit, a summary and a spawn start a new one. Each segment gets a lane
(a column), reused once the segment above it has ended, like `git log --graph`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..context.graphinfo import is_hidden_context, is_summary, is_tool_call
from ..core.graph import Graph
from ..core.model import ROOT, Call

EDGE_CHAIN, EDGE_FORK, EDGE_SPAWN = 0, 1, 2


@dataclass
class Segment:
    start: int                 # first row
    end: int                   # last row (the tip when it has no continuation)
    parent_row: int            # the row it leaves from (-1: the session's start)
    edge: int                  # EDGE_CHAIN (the first segment), EDGE_FORK or EDGE_SPAWN
    lane: int = 0


@dataclass
class Layout:
    rows: list[Call] = field(default_factory=list)
    row_of: dict[str, int] = field(default_factory=dict)     # row node id -> row index
    rep: dict[str, int] = field(default_factory=dict)        # any node id -> the row it folds into (-1: none)
    parent: list[int] = field(default_factory=list)
    seg_of: list[int] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    lanes: int = 0
    tail: list[int] = field(default_factory=list)            # per segment: its last row so far
    last_seq: int = -1                                       # the newest node added

    def add(self, g: Graph, c: Call) -> int:
        """Take node `c` (newer than every node added so far) into the layout: its row, or -1 when
        it folds into another row (`rep[c.id]` says which). Lanes are assigned by `assign_lanes`."""
        self.last_seq = max(self.last_seq, c.seq)
        if not _is_row(g, c):
            if is_hidden_context(c) and c.predecessor is not None:
                self.rep[c.id] = self.rep.get(c.predecessor, -1)
            else:
                self.rep[c.id] = self.rep.get(c.caller, -1)
            return -1
        r = len(self.rows)
        self.rows.append(c)
        self.row_of[c.id] = r
        self.rep[c.id] = r
        if c.is_spawn_root:
            p, edge = self.rep.get(c.caller, -1), EDGE_SPAWN
        else:
            p, edge = (self.rep.get(c.predecessor, -1) if c.predecessor not in (None, ROOT) else -1), EDGE_FORK
        self.parent.append(p)
        seg = -1
        if edge != EDGE_SPAWN and not is_summary(c):
            if p >= 0 and self.tail[self.seg_of[p]] == p:
                seg = self.seg_of[p]
            elif p < 0 and not self.segments:
                edge = EDGE_CHAIN
        if seg < 0:
            seg = len(self.segments)
            self.segments.append(Segment(r, r, p, EDGE_CHAIN if (p < 0 and seg == 0) else edge))
            self.tail.append(r)
        else:
            self.tail[seg] = r
            self.segments[seg].end = r
        self.seg_of.append(seg)
        return r


def _is_row(g: Graph, c: Call) -> bool:
    if is_hidden_context(c):
        return False
    if c.is_spawn_root or is_summary(c):
        return True
    if c.predecessor is None:
        return False
    if c.role == "code":
        return not is_tool_call(g, c)
    return True


def layout(g: Graph) -> Layout:
    """The rows, edges, segments and lanes of graph `g` (core.graph.Graph), in one pass by seq."""
    out = Layout()
    for c in sorted((c for c in g.nodes.values() if c.id != ROOT), key=lambda c: c.seq):
        out.add(g, c)
    assign_lanes(out)
    return out


def assign_lanes(out: Layout) -> None:
    """Each segment's lane: the first lane free from where its connector starts (all again: a
    segment that grew may push a later one to another lane)."""
    lane_end: list[int] = []    # per lane: the last row it is busy until
    for s in out.segments:
        busy_from = s.parent_row if s.parent_row >= 0 else s.start   # its connector starts there
        for lane, end in enumerate(lane_end):
            if end < busy_from:
                s.lane = lane
                lane_end[lane] = s.end
                break
        else:
            s.lane = len(lane_end)
            lane_end.append(s.end)
    out.lanes = max(1, len(lane_end))
