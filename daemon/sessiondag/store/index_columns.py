"""A chunk's node index as columns (the index format commits write; store/node_index.py):

    {"chunk": "<git blob id of the chunk>", "ids": [id, …], "seqs": [seq, …], "at": [created_at, …],
     "kinds": [[role, name, status], …], "kind": [k, …], "caller": [ref, …], "pred": [ref | null, …],
     "spawn": [row, …], "spans": [span, …]}

one entry per line of the chunk in every column, in line order: `kind` indexes `kinds` (each
distinct role, name and status of the chunk once); a `ref` is an int d ≥ 1 for the node d lines
before in this chunk, 0 for ROOT, else the id of a node of an earlier chunk; `spawn` lists the
lines of spawn-branch roots; `spans` as in node_index.py. Against the rows format (one list of
nine per node) it holds the same facts in about half the bytes, and an open parses one string per
node (its id) instead of six: the parse was a quarter of a 100k-node open's CPU.

An index whose columns are not lists of one entry per id (kinds and spawn rows in range) does not
describe its chunk: `columns` gives None and the chunk is parsed whole, as for any index that
does not match. A ref that names no line of the chunk is damage (core/node_fold.py fold_columns).
"""

from __future__ import annotations

from typing import cast

from ..core.model import ROOT
from .line_shape import packed_span

COLUMNS = ("ids", "seqs", "at", "kind", "caller", "pred")


def build(records: list[tuple[dict[str, object], bytes]], chunk_id: bytes) -> dict[str, object]:
    """The column index of a chunk's (record, line) pairs, in line order."""
    ids, seqs, at, callers, preds = [], [], [], [], []
    kind, spawn, spans = [], [], []
    kinds: dict[tuple[object, object, object], int] = {}
    line_of: dict[str, int] = {}  # id -> its line, of the lines before

    def ref(x: object, i: int) -> object:
        if x is None or type(x) is not str:
            return x
        if x == ROOT:
            return 0
        j = line_of.get(x)
        return x if j is None else i - j

    for i, (d, line) in enumerate(records):
        nid = d["id"]
        k = (d["role"], d["name"], d["status"])
        kind.append(kinds.setdefault(k, len(kinds)))
        callers.append(ref(d["caller"], i))
        preds.append(ref(d["predecessor"], i))
        md = d["metadata"]
        if isinstance(md, dict) and md.get("spawn_branch_root"):
            spawn.append(i)
        ids.append(nid)
        seqs.append(d["seq"])
        at.append(d["created_at"])
        spans.append(packed_span(line))
        if type(nid) is str:
            line_of[nid] = i
    return {"chunk": chunk_id.decode(), "ids": ids, "seqs": seqs, "at": at, "kinds": [list(k) for k in kinds],
            "kind": kind, "caller": callers, "pred": preds, "spawn": spawn, "spans": spans}


class Columns(list):  # type: ignore[type-arg]
    """A column index as read_chunk folds it: the ids (the list itself: one per line), the other
    columns, the spans (None when malformed: the render searches the line)."""

    __slots__ = ("seqs", "at", "kinds", "kind", "caller", "pred", "spawn", "spans")

    def __init__(self, d: dict[str, list[object]], spans: list[int] | None):
        super().__init__(d["ids"])
        self.seqs, self.at, self.kinds = d["seqs"], d["at"], d["kinds"]
        self.kind, self.spawn = cast(list[int], d["kind"]), cast(list[int], d["spawn"])  # checked: columns()
        self.caller, self.pred = d["caller"], d["pred"]
        self.spans = spans


def columns(d: dict[str, object], spans: list[int] | None) -> Columns | None:
    """The columns of a parsed index if they are well formed (each a list with an entry per id,
    every `kind` an index of `kinds`, every `spawn` a line), else None."""
    cols = {k: v for k in (*COLUMNS, "kinds", "spawn") if isinstance(v := d.get(k), list)}
    if len(cols) != len(COLUMNS) + 2 or any(len(cols[k]) != len(cols["ids"]) for k in COLUMNS):
        return None
    if not (_indexes(cols["kind"], len(cols["kinds"])) and _indexes(cols["spawn"], len(cols["ids"]))):
        return None
    return Columns(cols, spans)


def _indexes(xs: list[object], n: int) -> bool:
    """Every item of `xs` an int (no bool) in range(n)."""
    if not xs:
        return True
    if set(map(type, xs)) != {int}:
        return False
    ints = cast(list[int], xs)
    return 0 <= min(ints) and max(ints) < n
