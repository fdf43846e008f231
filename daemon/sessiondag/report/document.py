"""The report's data document: everything the viewer shows of one session, as plain JSON values.

    {v, meta, lanes, rows: {id, seq, role, status, name, parent, seg, flags, snip}, segs, summaries,
     branches, usage, chunk_size, chunks: [[row body, …], …]}

`rows` are columns (one entry per row, layout.py) so the picture and the newest turns paint from them
alone; the bodies (bodies.py) come in chunks of CHUNK rows that the viewer decodes when it needs
them (a chat scrolled back, a search). The same document feeds the file (html.py) and the live
viewer (bridge.py).
"""

from __future__ import annotations

import time
from typing import Callable

from .. import __version__
from ..context.aging import SUMMARY_KEY
from ..context.ledger import Ledger, UsageRow, UsageTotals, ledger_for
from ..core.graph import Graph
from ..core.model import ROOT, Call
from ..store.session import Session
from ..sync.summary import title_of
from .bodies import Bodies, Limits
from .diffs import turn_diff
from .layout import Layout, layout
from .page_types import BranchEntry, Cell, Document, FileChange, Meta, RowBody, RowCols, UsageRollup
from .redact import Redactor

VERSION = 1
CHUNK = 200
SNIP = 72
EXACT_BRANCH_USAGE = 300     # tips whose whole-branch cost is computed exactly (one ledger scope each)

F_SPAWN, F_SUMMARY, F_HEAD, F_TURN, F_COMPACTED, F_CALLS, F_CALL_ERROR = 1, 2, 4, 8, 16, 32, 64
ROLE = {"user": "u", "llm": "l", "code": "c"}
STATUS = {"completed": "c", "error": "e", "cancelled": "x", "running": "r"}


def _snip(b: RowBody) -> str:
    t = b.get("text")
    t = t.get("text", "") if isinstance(t, dict) else (t or "")
    if not t and b.get("calls"):
        t = "→ " + ", ".join(c["name"] for c in b["calls"][:4])
    t = " ".join(str(t).split())
    return t if len(t) <= SNIP else t[: SNIP - 1] + "…"


def build(session: Session, limits: Limits | None = None, *, live: bool = False) -> Document:
    """The document of `session` (a store Session), read under its lock."""
    limits = limits or Limits()
    with session.lock:
        return build_with_layout(session, limits, live)[0]


COLS = ("id", "seq", "role", "status", "name", "parent", "seg", "flags", "snip")


class Rows:
    """What one row of the document holds: its columns (COLS) and its body. Shared by the file's
    one-pass build and the live document's patches (live.py), so both say the same of a row."""

    def __init__(self, s: Session, lay: Layout, limits: Limits):
        self.s, self.lay, self.limits = s, lay, limits
        self.bodies = Bodies(s, lay, limits)
        self.covered = covered_ids(s.graph)
        self.head_row = lay.rep.get(s.graph.head_id, -1)

    def row(self, r: int) -> tuple[RowCols, RowBody]:
        s, c, red, limits = self.s, self.lay.rows[r], self.limits.redactor, self.limits
        b = self.bodies.row(r)
        flags = 0
        if c.is_spawn_root:
            flags |= F_SPAWN
        if c.name == "context/summary":
            flags |= F_SUMMARY
        if r == self.head_row:
            flags |= F_HEAD
        if c.role == "user" and c.caller == ROOT:
            flags |= F_TURN
            files = turn_diff(s, c, limits.max_diff_bytes, limits.max_field_bytes, red)
            b["files"] = files if files is not None else _attributed(s, c, red)
            b["files_from"] = "checkpoint" if files is not None else "tool calls"
        if c.id in self.covered:
            flags |= F_COMPACTED
        if b.get("calls"):
            flags |= F_CALLS
            if any(x["status"] == "error" for x in b["calls"]):
                flags |= F_CALL_ERROR
        return (c.id, c.seq, ROLE.get(c.role, "c"), STATUS.get(c.status, "c"), red.text(c.name), self.lay.parent[r],
                self.lay.seg_of[r], flags, _snip(b)), b


def summary_entry(r: int, b: RowBody) -> list[int]:
    """A summary row's entry in `summaries`: [row, first covered row, last covered row, nodes]."""
    return [r, *(b.get("covers") or [-1, -1, 0])]


def covered_ids(g: Graph) -> set[str]:
    """The nodes the session's active compaction summary stands for."""
    active = g.extra.get(SUMMARY_KEY)
    if active in g.nodes:
        return set(g.nodes[active].metadata.get("covers_ids") or ())
    return set()


def segs_of(lay: Layout) -> list[list[int]]:
    return [[x.start, x.end, x.parent_row, x.edge, x.lane] for x in lay.segments]


def build_with_layout(s: Session, limits: Limits, live: bool) -> tuple[Document, Layout]:
    """The document and the layout it was made from (the caller holds the session lock)."""
    g = s.graph
    red = limits.redactor
    lay = layout(g)
    rows = Rows(s, lay, limits)
    n = len(lay.rows)
    cols: dict[str, list[Cell]] = {k: [] for k in COLS}
    chunks: list[list[RowBody]] = []
    summaries: list[list[int]] = []
    for r in range(n):
        vals, b = rows.row(r)
        cells: tuple[Cell, ...] = vals
        for k, v in zip(COLS, cells):
            cols[k].append(v)
        if vals[7] & F_SUMMARY:
            summaries.append(summary_entry(r, b))
        if r % CHUNK == 0:
            chunks.append([])
        chunks[-1].append(b)
    ledger = ledger_for(s)
    return {"v": VERSION, "meta": meta(s, red, live, n), "lanes": lay.lanes, "rows": cols, "segs": segs_of(lay),
            "summaries": summaries, "branches": branches(g, lay, ledger, red), "usage": usage(ledger, lay),
            "chunk_size": CHUNK, "chunks": chunks}, lay


def _attributed(s: Session, user: Call, red: Redactor) -> list[FileChange]:
    """A turn without checkpoints: the paths its tool calls recorded (their diffs are on the calls)."""
    seen: dict[str, FileChange] = {}
    for c in s.graph.descendants_by_caller(user.id):
        files = c.metadata.get("workspace_files") if c.role == "code" else None
        if isinstance(files, list):
            for f in files:
                if isinstance(f, dict) and isinstance(f.get("path"), str):
                    seen.setdefault(f["path"], {"path": red.text(f["path"]), "change": "modified",
                                                "note": f"written by {c.name} (#{c.seq}); no checkpoint"})
    return list(seen.values())


def meta(s: Session, red: Redactor, live: bool, rows: int, title: str | None = None) -> Meta:
    """The document's `meta`; `title` when the caller knows it (title_of reads the first message)."""
    g = s.graph
    return {"session_id": s.id, "title": red.text((title if title is not None else title_of(g)) or s.id),
            "working_dir": red.text(str(s.info.get("working_dir") or "")), "head_id": g.head_id,
            "nodes": len(g.nodes) - 1, "rows": rows, "exported_at": time.time(), "version": __version__,
            "live": live, "redact_patterns": len(red.patterns), "last_seq": g.last_seq}


def branches(g: Graph, lay: Layout, ledger: Ledger, red: Redactor,
             usage_of: Callable[[str], UsageTotals] | None = None) -> list[BranchEntry]:
    """Every branch tip with its whole-branch usage (`usage_of(head_id)`, the ledger's by default)
    when there are at most EXACT_BRANCH_USAGE of them."""
    tips = g.list_branches()
    exact = len(tips) <= EXACT_BRANCH_USAGE
    if usage_of is None:
        def usage_of(head_id: str) -> UsageTotals:
            return ledger.usage("branch", head_id=head_id)["total"]
    out: list[BranchEntry] = []
    for b in tips:
        row = lay.rep.get(b.head_id, -1)
        d: BranchEntry = {"row": row, "head_id": b.head_id, "name": red.text(b.name) if b.name else None, "main": b.main,
             "current": b.current, "spawn": b.spawn_root is not None, "status": b.status}
        if exact:
            d["usage"] = usage_of(b.head_id)
        out.append(d)
    return out


def usage(ledger: Ledger, lay: Layout) -> UsageRollup:
    """The session's total and each segment's own spend (ledger `by: branch` rows, by start row)."""
    res = ledger.usage("branch")
    segs: dict[int, UsageRow] = {}
    for row in res["rows"]:
        start = lay.rep.get(row.get("start_id") or "", -1)
        if start >= 0:
            segs[lay.seg_of[start]] = row
    subs = ledger.usage("subagent")["rows"]
    return {"total": res["total"], "segments": {str(k): v for k, v in segs.items()},
            "subagents": [{**r, "row": lay.rep.get(r.get("branch_root") or "", -1)} for r in subs]}
