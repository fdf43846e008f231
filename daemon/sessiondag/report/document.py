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
from typing import Any

from .. import __version__
from ..context.aging import SUMMARY_KEY
from ..context.ledger import ledger_for
from ..core.model import ROOT
from ..sync.summary import title_of
from .bodies import Bodies, Limits
from .diffs import turn_diff
from .layout import Layout, layout

VERSION = 1
CHUNK = 200
SNIP = 72
EXACT_BRANCH_USAGE = 300     # tips whose whole-branch cost is computed exactly (one ledger scope each)

F_SPAWN, F_SUMMARY, F_HEAD, F_TURN, F_COMPACTED, F_CALLS, F_CALL_ERROR = 1, 2, 4, 8, 16, 32, 64
ROLE = {"user": "u", "llm": "l", "code": "c"}
STATUS = {"completed": "c", "error": "e", "cancelled": "x", "running": "r"}


def _snip(b: dict[str, Any]) -> str:
    t = b.get("text")
    t = t.get("text", "") if isinstance(t, dict) else (t or "")
    if not t and b.get("calls"):
        t = "→ " + ", ".join(c["name"] for c in b["calls"][:4])
    t = " ".join(str(t).split())
    return t if len(t) <= SNIP else t[: SNIP - 1] + "…"


def build(session: Any, limits: Limits | None = None, *, live: bool = False) -> dict[str, Any]:
    """The document of `session` (a store Session), read under its lock."""
    limits = limits or Limits()
    with session.lock:
        return _build(session, limits, live)


def _build(s: Any, limits: Limits, live: bool) -> dict[str, Any]:
    g = s.graph
    red = limits.redactor
    lay = layout(g)
    bodies = Bodies(s, lay, limits)
    n = len(lay.rows)
    cols: dict[str, list[Any]] = {k: [] for k in ("id", "seq", "role", "status", "name", "parent", "seg", "flags",
                                                 "snip")}
    covered: set[str] = set()
    active = g.extra.get(SUMMARY_KEY)
    if active in g.nodes:
        covered = set(g.nodes[active].metadata.get("covers_ids") or ())
    head_row = lay.rep.get(g.head_id, -1)
    chunks: list[list[dict[str, Any]]] = []
    summaries: list[list[int]] = []
    for r, c in enumerate(lay.rows):
        b = bodies.row(r)
        flags = 0
        if c.is_spawn_root:
            flags |= F_SPAWN
        if c.name == "context/summary":
            flags |= F_SUMMARY
            summaries.append([r, *(b.get("covers") or [-1, -1, 0])])
        if r == head_row:
            flags |= F_HEAD
        if c.role == "user" and c.caller == ROOT:
            flags |= F_TURN
            files = turn_diff(s, c, limits.max_diff_bytes, limits.max_field_bytes, red)
            b["files"] = files if files is not None else _attributed(s, c, red)
            b["files_from"] = "checkpoint" if files is not None else "tool calls"
        if c.id in covered:
            flags |= F_COMPACTED
        if b.get("calls"):
            flags |= F_CALLS
            if any(x["status"] == "error" for x in b["calls"]):
                flags |= F_CALL_ERROR
        cols["id"].append(c.id)
        cols["seq"].append(c.seq)
        cols["role"].append(ROLE.get(c.role, "c"))
        cols["status"].append(STATUS.get(c.status, "c"))
        cols["name"].append(red.text(c.name))
        cols["parent"].append(lay.parent[r])
        cols["seg"].append(lay.seg_of[r])
        cols["flags"].append(flags)
        cols["snip"].append(_snip(b))
        if r % CHUNK == 0:
            chunks.append([])
        chunks[-1].append(b)
    ledger = ledger_for(s)
    return {"v": VERSION, "meta": _meta(s, red, live, n), "lanes": lay.lanes, "rows": cols,
            "segs": [[x.start, x.end, x.parent_row, x.edge, x.lane] for x in lay.segments],
            "summaries": summaries, "branches": _branches(g, lay, ledger, red), "usage": _usage(ledger, lay),
            "chunk_size": CHUNK, "chunks": chunks}


def _attributed(s: Any, user: Any, red: Any) -> list[dict[str, Any]]:
    """A turn without checkpoints: the paths its tool calls recorded (their diffs are on the calls)."""
    seen: dict[str, dict[str, Any]] = {}
    for c in s.graph.descendants_by_caller(user.id):
        files = c.metadata.get("workspace_files") if c.role == "code" else None
        if isinstance(files, list):
            for f in files:
                if isinstance(f, dict) and isinstance(f.get("path"), str):
                    seen.setdefault(f["path"], {"path": red.text(f["path"]), "change": "modified",
                                                "note": f"written by {c.name} (#{c.seq}); no checkpoint"})
    return list(seen.values())


def _meta(s: Any, red: Any, live: bool, rows: int) -> dict[str, Any]:
    g = s.graph
    return {"session_id": s.id, "title": red.text(title_of(g) or s.id),
            "working_dir": red.text(str(s.info.get("working_dir") or "")), "head_id": g.head_id,
            "nodes": len(g.nodes) - 1, "rows": rows, "exported_at": time.time(), "version": __version__,
            "live": live, "redact_patterns": len(red.patterns), "last_seq": g.last_seq}


def _branches(g: Any, lay: Layout, ledger: Any, red: Any) -> list[dict[str, Any]]:
    tips = g.list_branches()
    exact = len(tips) <= EXACT_BRANCH_USAGE
    out = []
    for b in tips:
        row = lay.rep.get(b.head_id, -1)
        d = {"row": row, "head_id": b.head_id, "name": red.text(b.name) if b.name else None, "main": b.main,
             "current": b.current, "spawn": b.spawn_root is not None, "status": b.status}
        if exact:
            d["usage"] = ledger.usage("branch", head_id=b.head_id)["total"]
        out.append(d)
    return out


def _usage(ledger: Any, lay: Layout) -> dict[str, Any]:
    """The session's total and each segment's own spend (ledger `by: branch` rows, by start row)."""
    res = ledger.usage("branch")
    segs: dict[int, dict[str, Any]] = {}
    for row in res["rows"]:
        start = lay.rep.get(row.get("start_id") or "", -1)
        if start >= 0:
            segs[lay.seg_of[start]] = row
    subs = ledger.usage("subagent")["rows"]
    return {"total": res["total"], "segments": {str(k): v for k, v in segs.items()},
            "subagents": [dict(r, row=lay.rep.get(r.get("branch_root") or "", -1)) for r in subs]}
