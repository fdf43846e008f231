"""An open's fold of a chunk's index into nodes, with the proof of what Graph.from_snapshot checks.

`fold_skeletons` (index rows) and `fold_columns` (a column index, store/index_columns.py) build the
same nodes `call_from_skeleton` builds, one per row, inline (a helper call per row costs ~6 ms of a
100k-node open, hence two near-twin loops), and keep the proof store/snapshot.py's Fold carries across
a load's chunks: ROOT first, seqs exact ints strictly increasing, every caller and predecessor a node
folded before. Where it holds, the graph takes the table as it is (Graph.from_checked).
"""

from __future__ import annotations

from itertools import repeat
from sys import intern
from typing import Any

from .model import INTERNED_ROLES as _ROLE, INTERNED_STATUSES as _STATUS, LAZY_BODY as _LAZY, ROOT, Call

_new = object.__new__


def fold_skeletons(rows: Any, spans: list[int] | None, raw: Any, ids: dict[str, Call], out: list[Call],
                   ordered: bool, last: int | float) -> tuple[bool, int | float, bool]:
    """call_from_skeleton over `rows` (`spans`: one per row, None for none), inline: each node put
    into `ids` (a later record of an id replacing it in place) and appended to `out`. Returns
    (`ordered` and every row's caller and predecessor was in `ids` before it and its seq an int
    greater than the one before — `last` for the first —, the last such seq, whether a row was a
    spawn-branch root's). store/snapshot.py's Fold keeps this proof across a load's chunks."""
    new, get, add, role_of, status_of, lazy = _new, ids.get, out.append, _ROLE.get, _STATUS.get, _LAZY
    spawned = False
    for row, span in zip(rows, spans) if spans is not None else ((r, 0) for r in rows):
        c = new(Call)
        nid, seq, c.created_at, role, name, status, caller, pred, spawn = row
        c.id = nid
        c.seq = seq
        c.role, c.status, c.name = role_of(role, role), status_of(status, status), intern(name)
        x = get(caller)
        if x is not None:
            c.caller = x.id
        else:
            c.caller = ROOT if caller == ROOT else caller
            ordered = False
        if pred is not None:
            x = get(pred)
            if x is not None:
                pred = x.id
            else:
                pred = ROOT if pred == ROOT else pred
                ordered = False
        c.predecessor = pred
        if spawn:
            c._spawn = spawned = True
        else:
            c._spawn = False
        c._input = c._output = c._reads = c._metadata = lazy
        c._raw = raw
        c.line_span = span
        if ordered:
            if type(seq) is int and seq > last:
                last = seq
            else:
                ordered = False
        ids[nid] = c
        add(c)
    return ordered, last, spawned


def fold_columns(node_ids: list[Any], seqs: list[Any], at: list[Any], kinds: list[Any], kind: list[int],
                 callers: list[Any], preds: list[Any], spawn: list[int], spans: list[int] | None, raw: Any,
                 ids: dict[str, Call], out: list[Call], ordered: bool, last: int | float) -> tuple[bool, int | float]:
    """fold_skeletons over a column index (store/index_columns.py: columns of one length, every
    `kind` an index of `kinds`, every `spawn` a row): the same nodes the rows of the same facts
    give, and the same proof; a ref names a node of this chunk by distance (d >= 1: the row d
    before), 0 ROOT, else by id. A ref to no earlier row of the chunk raises ValueError."""
    new, get, lazy = _new, ids.get, _LAZY
    kinds = [(_ROLE.get(r, r), intern(n), _STATUS.get(s, s)) for r, n, s in kinds]
    chunk: list[Call] = []
    push = chunk.append
    i = 0
    for nid, seq, ts, k, caller, pred, span in zip(node_ids, seqs, at, kind, callers, preds,
                                                   spans if spans is not None else repeat(0)):
        c = new(Call)
        c.id, c.seq, c.created_at = nid, seq, ts
        c.role, c.name, c.status = kinds[k]
        if type(caller) is int:
            if not 0 <= caller <= i:
                raise ValueError(f"row {i}: caller {caller} names no earlier row")
            c.caller = chunk[-caller].id if caller else ROOT
        else:
            x = get(caller)
            if x is not None:
                c.caller = x.id
            else:
                c.caller = ROOT if caller == ROOT else caller
                ordered = False
        if type(pred) is int:
            if not 0 <= pred <= i:
                raise ValueError(f"row {i}: predecessor {pred} names no earlier row")
            pred = chunk[-pred].id if pred else ROOT
        elif pred is not None:
            x = get(pred)
            if x is not None:
                pred = x.id
            else:
                pred = ROOT if pred == ROOT else pred
                ordered = False
        c.predecessor = pred
        c._spawn = False
        c._input = c._output = c._reads = c._metadata = lazy
        c._raw = raw
        c.line_span = span
        if ordered:
            if type(seq) is int and seq > last:
                last = seq
            else:
                ordered = False
        ids[nid] = c
        push(c)
        i += 1
    for j in spawn:
        chunk[j]._spawn = True
    out.extend(chunk)
    return ordered, last
