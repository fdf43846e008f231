"""What a snapshot holds: what one turn commit writes (the chunk of nodes the turn touched, the
meta, the message) and the graph an open rebuilds from it: its chunks folded into one node table
(`read_chunk`, with `Fold`'s proof of what Graph.from_snapshot checks), then the graph.

Pure functions over the graph; `Session` calls them under the session lock.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import orjson

from ..core.graph import Graph
from ..core.model import ROOT, Call, call_from_raw, call_from_skeleton
from ..core.node_fold import fold_columns, fold_skeletons
from .index_columns import Columns
from .node_index import ChunkReader, CorruptSnapshotError, DeferredChunk
from .journal import CorruptJournalError

_BLOB_REF = re.compile(rb'"\$blob":"([0-9a-f]{40})"')
# before/after contents of the files a tool call changed (runtime/file_records.py): kept reachable too
_FILE_REF = re.compile(rb'"(?:before|after)_blob":"([0-9a-f]{40})"')


def turn_chunk(g: Graph, dirty: Iterable[str]) -> tuple[bytes | None, set[str]]:
    """(JSONL of the nodes created or changed since the last commit in seq order, blob ids they
    reference). The blob ids go into the snapshot tree so every spilled body stays reachable."""
    nodes = g.nodes
    ids = sorted((i for i in dirty if i in nodes), key=lambda i: nodes[i].seq)
    if not ids:
        return None, set()
    check_committable(nodes, ids)
    chunk = b"".join(nodes[i].encoded(keep=False) + b"\n" for i in ids)
    return chunk, {m.decode() for m in _BLOB_REF.findall(chunk) + _FILE_REF.findall(chunk)}


def check_committable(nodes: dict[str, Call], ids: list[str]) -> None:
    """Before a commit writes them (`ids` in seq order): the nodes pass what a snapshot load
    checks (Graph.from_snapshot): distinct seqs, each caller and predecessor an older node. A
    commit never writes what the loader would refuse; a few lookups per node of the turn."""
    prev = None
    for i in ids:
        c = nodes[i]
        if i == ROOT:
            prev = c.seq
            continue
        seq, p = c.seq, c.predecessor
        caller = nodes.get(c.caller)
        pred = None if p is None or p == ROOT else nodes.get(p)
        if seq == prev or caller is None or caller.seq >= seq or \
                (p is not None and p != ROOT and (pred is None or pred.seq >= seq)):
            raise CorruptJournalError(f"refusing to commit node {i!r} (seq {seq}): a snapshot load would refuse "
                                      f"it (a shared seq, or a caller or predecessor that does not precede it)")
        prev = seq


def snapshot_meta(g: Graph, *, schema_version: int, session_id: str, info: dict[str, Any], turn: int,
                  usage_previous: tuple[int, int], journal_id: str | None, journal_offset: int) -> dict[str, Any]:
    """meta.json of a snapshot: everything besides the nodes that reopening needs."""
    return {
        "schema_version": schema_version, "session_id": session_id,
        "working_dir": info.get("working_dir"), "created_at": info.get("created_at"),
        "head_id": g.head_id, "branch_names": g.branch_names, "spawn_heads": g.spawn_heads,
        "extra": g.extra, "last_seq": g.last_seq, "turn": turn,
        "usage_total": list(g.usage_total), "usage_previous": list(usage_previous),
        "journal": {"id": journal_id, "offset": journal_offset},
    }


def describe_turn(g: Graph, new_ids: Iterable[str], turn: int) -> str:
    """The commit message: turn number, how it ended, the user's words, how many nodes."""
    new = [g.nodes[i] for i in new_ids if i in g.nodes]
    users = [c for c in new if c.role == "user" and c.caller == ROOT]
    status = "completed"
    for c in new:
        if c.status in ("error", "cancelled"):
            status = c.status
    text = ""
    if users:
        out = users[0].output
        text = out if isinstance(out, str) else (out.get("preview", "") if isinstance(out, dict) else "")
        text = " ".join(text.split())[:72]
    head = f"turn {turn}: {status}" + (f" — {text!r}" if text else "")
    return f"{head}\n\n{len(new)} node(s) recorded; head {g.head_id}\n"


def graph_from_snapshot(meta: dict[str, Any], chunks: Iterable[tuple[Any, ...]]) -> Graph:
    """The graph a snapshot describes: its chunks as GitSnapshots.iter_chunks gives them, in commit
    order (a later record of a node replaces the earlier one in place), plus the head, names and
    marks from its meta. A chunk with an index (store/node_index.py) gives each node its skeleton
    and leaves the bodies in storage until one is read; a chunk without is parsed whole and each
    node keeps its stored line as its encoding and body (decoded on first read)."""
    fold = Fold()
    latest = fold.nodes
    for where, data, chunk_id, rows, reader in chunks:
        try:
            read_chunk(data, chunk_id, rows, reader, fold)
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
            raise CorruptSnapshotError(f"chunk {where} unreadable: {type(exc).__name__}: {exc}") from None
    if fold.checked and type(fold.last) is int and meta["usage_total"] is not None:  # what from_snapshot checks held
        g = Graph.from_checked(latest, last_seq=fold.last, spawned=fold.spawned, head_id=meta["head_id"],
                               branch_names=meta["branch_names"], spawn_heads=meta["spawn_heads"],
                               usage_total=meta["usage_total"])
    else:
        g = Graph.from_snapshot(list(latest.values()), head_id=meta["head_id"], branch_names=meta["branch_names"],
                                spawn_heads=meta["spawn_heads"], usage_total=meta["usage_total"])
    g.extra = dict(meta["extra"])
    return g


class Fold:
    """A load's node table as read_chunk fills it (`nodes`: id -> Call, a later record replacing an
    earlier one in place), and whether it already holds what Graph.from_snapshot checks, proved
    row by row as the indexed chunks are folded (`checked`): the first row is ROOT, every seq an
    int greater than the one before, no id folded twice, every caller and predecessor an earlier
    node. Then the graph takes the table as it is (Graph.from_checked) instead of checking each
    node again; anything else (a chunk without an index, a later record of a node, rows out of
    seq order, an edge to a node not folded yet, damage) leaves it False and the load goes
    through from_snapshot, which raises what it raised before."""

    __slots__ = ("nodes", "checked", "last", "spawned")

    def __init__(self) -> None:
        self.nodes: dict[str, Call] = {}
        self.checked = False
        self.last: int | float = float("-inf")  # the seq of the last row folded
        self.spawned = False                    # a row of a spawn-branch root was folded


def read_chunk(data: bytes | None, chunk_id: bytes, rows: list[list[Any]] | None, reader: ChunkReader | None,
               fold: Fold) -> None:
    """Fold one chunk's nodes into `fold.nodes` (id -> Call; a later record replaces an earlier
    one in place), keeping its proof up to date (Fold). With index rows (Columns or IndexRows:
    store/node_index.py), the bodies stay in storage (DeferredChunk); without, `data` (the chunk)
    is parsed whole and each node keeps its stored line. Raises what a damaged record raises."""
    latest = fold.nodes
    if rows is not None and reader is not None:
        deferred = DeferredChunk(reader, chunk_id)
        reader.register(deferred, latest)
        first = not latest  # the load's first rows: ROOT's (from_snapshot checks no edge of it)
        before, calls = len(latest), deferred.calls
        if type(rows) is Columns:
            ok, last = fold_columns(rows, rows.seqs, rows.at, rows.kinds, rows.kind, rows.caller, rows.pred,
                                    rows.spawn, rows.spans, deferred, latest, calls, fold.checked or first, fold.last)
            fold.spawned = fold.spawned or bool(rows.spawn)
        else:
            spans, last = getattr(rows, "spans", None), fold.last
            if first and rows:
                c = call_from_skeleton(rows[0], deferred, latest, spans[0] if spans is not None else 0)
                latest[c.id] = c
                calls.append(c)
                rows, spans, before = rows[1:], spans[1:] if spans is not None else None, 1
                last = c.seq if type(c.seq) is int else last
            ok, last, spawned = fold_skeletons(rows, spans, deferred, latest, calls, fold.checked or first, last)
            fold.spawned = fold.spawned or spawned
        if first and calls:
            ok = ok and calls[0].id == ROOT and type(calls[0].seq) is int
        # a row whose id was folded before replaced that node in place: the proof no longer holds
        fold.checked = ok and len(latest) == before + len(rows)
        fold.last = last
        return
    fold.checked = False
    if data is None:  # a chunk without its index rows always comes as its bytes (GitStore.iter_chunks)
        raise CorruptSnapshotError(f"chunk {chunk_id.decode()} came without its bytes")
    loads = orjson.loads
    for raw in data.split(b"\n"):
        if raw:
            c = call_from_raw(loads(raw), raw, latest)
            latest[c.id] = c
