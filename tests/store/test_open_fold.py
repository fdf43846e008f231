"""An open's fold of index rows (store/snapshot.py Fold, core/node_fold.py fold_skeletons) proves what
Graph.from_snapshot checks as it builds the nodes, and then builds the graph without checking them
again (Graph.from_checked). For any index rows — a session's, or damaged: out of order, a later
record of a node, a shared or non-int seq, an edge to a later or unknown node, ROOT missing or not
first — the open builds exactly the graph the per-node path (call_from_skeleton + from_snapshot)
builds, or fails as it fails; and rows a commit writes take the fast way."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondag import ROOT, Call
from sessiondag.core.errors import InvalidNodeError
from sessiondag.core.graph import Graph
from sessiondag.core.model import call_from_skeleton
from sessiondag.store import index_columns, node_index
from sessiondag.store.index_columns import Columns
from sessiondag.store.node_index import CorruptSnapshotError, IndexRows
from sessiondag.store.snapshot import Fold, graph_from_snapshot, read_chunk

READER = node_index.ChunkReader("/nonexistent/git")  # registers the deferred chunks; nothing is read


def view(g: Graph):
    """Everything the open builds, in table order (the order of `g.nodes` is part of the graph)."""
    return ([(k, c.id, c.seq, c.created_at, c.role, c.name, c.status, c.caller, c.predecessor, c._spawn,
              c.line_span, c.is_spawn_root, g.is_chain_node(c)) for k, c in g.nodes.items()],
            g.head_id, g.branch_names, g.spawn_heads, g.last_seq, g.usage_total, g._lane, g._first_id)


def meta_of(head: str, usage: list[int] | None = (3, 4)) -> dict:
    return {"head_id": head, "branch_names": {}, "spawn_heads": {}, "extra": {"k": 1},
            "usage_total": None if usage is None else list(usage)}


def per_node(meta: dict, chunks: list[list[list]], spans: list[list[int] | None]):
    """The open as it was: each row through call_from_skeleton, then from_snapshot. (graph, None)
    or (None, the error's type)."""
    latest: dict = {}
    try:
        for rows, sp in zip(chunks, spans):
            raw = node_index.DeferredChunk(READER, b"0" * 40)
            for i, row in enumerate(rows):
                c = call_from_skeleton(row, raw, latest, sp[i] if sp is not None else 0)
                latest[c.id] = c
    except (KeyError, TypeError, AttributeError, ValueError):
        return None, CorruptSnapshotError
    try:
        g = Graph.from_snapshot(list(latest.values()), head_id=meta["head_id"], branch_names=meta["branch_names"],
                                spawn_heads=meta["spawn_heads"], usage_total=meta["usage_total"])
    except (InvalidNodeError, TypeError) as e:
        return None, type(e)
    g.extra = dict(meta["extra"])
    return g, None


def as_columns(rows: list[list], spans: list[int] | None) -> Columns | None:
    """The column index (index_columns.py) of the same rows, as a commit would write it and an
    open would read it; None for rows that are no records (cut short)."""
    if not all(len(r) == 9 for r in rows):
        return None
    recs = [({"id": r[0], "seq": r[1], "created_at": r[2], "role": r[3], "name": r[4], "status": r[5],
              "caller": r[6], "predecessor": r[7], "metadata": {"spawn_branch_root": True} if r[8] else {}}, b"")
            for r in rows]
    d = orjson.loads(orjson.dumps(index_columns.build(recs, b"1" * 40)))
    cols = index_columns.columns(d, None)
    assert cols is not None
    cols.spans = spans
    return cols


def folded(meta: dict, chunks: list[list[list]], spans: list[list[int] | None], columns: bool = False):
    """The open as it is now (graph_from_snapshot over the same rows, as rows or as columns):
    (graph, None) or (None, error type)."""
    index = as_columns if columns else IndexRows
    items = [(f"c{k}", None, b"%040d" % k, index(rows, sp), READER) for k, (rows, sp) in enumerate(zip(chunks, spans))]
    try:
        return graph_from_snapshot(meta, items), None
    except (CorruptSnapshotError, InvalidNodeError, TypeError) as e:
        return None, type(e)


def session_rows(n: int, draw) -> list[list]:
    """ROOT and `n` nodes as a session writes them: seqs 1..n, each caller and predecessor older."""
    rows = [["ROOT", 0, 1.0, "code", "session", "completed", "ROOT", None, 0]]
    ids = ["ROOT"]
    for i in range(1, n + 1):
        nid = f"n{i:03d}"
        kind = draw(st.sampled_from(["chat", "chat", "tool", "spawn", "fork"]))
        older = ids[draw(st.integers(0, len(ids) - 1))]
        if kind == "chat":
            row = [nid, i, 1.0 + i, draw(st.sampled_from(["user", "llm"])), "chat", "completed", "ROOT",
                   ids[-1] if i > 1 else "ROOT", 0]
        elif kind == "fork":
            row = [nid, i, 1.0 + i, "user", "fork", "completed", "ROOT", older, 0]
        elif kind == "tool":
            row = [nid, i, 1.0 + i, "code", "tool", draw(st.sampled_from(["running", "completed"])), older, None, 0]
        else:
            row = [nid, i, 1.0 + i, "user", "task", "completed", older, None, 1]
        rows.append(row)
        ids.append(nid)
    return rows


MUTATIONS = ["swap", "seq_equal", "seq_smaller", "seq_float", "seq_bool", "seq_str", "replace", "replace_moved",
             "caller_later", "caller_unknown", "pred_later", "pred_self", "root_late", "no_root", "spawn_on_chat",
             "bad_row", "name_not_str", "pred_root_nested", "before_root", "replace_last", "replace_last"]


@st.composite
def snapshots(draw):
    rows = session_rows(draw(st.integers(0, 14)), draw)
    for _ in range(draw(st.integers(0, 3))):
        if not rows:
            break
        m = draw(st.sampled_from(MUTATIONS))
        i = draw(st.integers(0, len(rows) - 1))
        j = draw(st.integers(0, len(rows) - 1))
        r = list(rows[i])
        if m == "swap":
            rows[i], rows[j] = rows[j], rows[i]
            continue
        if len(r) < 9 or len(rows[j]) < 9:  # a row cut short already (bad_row)
            continue
        if m == "seq_equal":
            r[1] = rows[j][1]
        elif m == "seq_smaller":
            r[1] = r[1] - draw(st.integers(1, 3)) if type(r[1]) is int else r[1]
        elif m == "seq_float":
            r[1] = float(r[1]) if type(r[1]) is int else r[1]
        elif m == "seq_bool":
            r[1] = bool(i % 2)
        elif m == "seq_str":
            r[1] = str(r[1])
        elif m in ("replace", "replace_moved"):  # a later record of node i (an update), maybe changed
            r2 = list(rows[i])
            if m == "replace_moved":
                r2[1] = draw(st.integers(-1, len(rows) + 2))
                r2[6] = rows[j][0]
            r2[5] = "completed"
            rows.insert(draw(st.integers(i + 1, len(rows))), r2)
            continue
        elif m == "before_root":  # a row ahead of ROOT, with a smaller seq
            rows.insert(0, ["early", -1, 1.0, "user", "chat", "completed", draw(st.sampled_from(["ROOT", "nobody"])),
                            None, 0])
            if draw(st.booleans()):  # and ROOT naming it as its caller
                rows[1:] = [[*x[:6], "early", *x[7:]] if x[:1] == ["ROOT"] and len(x) == 9 else x for x in rows[1:]]
            continue
        elif m == "replace_last":  # a later record of node i at the end, with the greatest seq yet
            seqs = [x[1] for x in rows if len(x) > 1 and type(x[1]) is int]
            r[1], r[6] = max(seqs, default=0) + 1, rows[j][0]
            rows.append(r)
            continue
        elif m == "caller_later":
            r[6] = rows[j][0]
        elif m == "caller_unknown":
            r[6] = "nobody"
        elif m == "pred_later":
            r[7] = rows[j][0]
        elif m == "pred_self":
            r[7] = r[0]
        elif m == "root_late":
            rows.append(rows.pop(0))
            continue
        elif m == "no_root":
            if rows and rows[0][0] == "ROOT":
                rows.pop(0)
            continue
        elif m == "spawn_on_chat":
            r[8] = 1
        elif m == "bad_row":
            r = r[:draw(st.integers(0, 8))]
        elif m == "name_not_str":
            r[4] = 7
        elif m == "pred_root_nested":
            r[7] = "ROOT"
        rows[i] = r
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=4)))
    chunks = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)])]
    spans = [draw(st.one_of(st.none(), st.just([(k + 1) << 32 | (k + 9) for k in range(len(c))]))) for c in chunks]
    ids = [r[0] for r in rows if r and isinstance(r[0], str)]
    head = draw(st.sampled_from(ids)) if ids else ROOT
    return meta_of(head, draw(st.sampled_from([(3, 4), (0, 0)]))), chunks, spans


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(snap=snapshots())
def test_the_fold_builds_what_the_per_node_open_builds_or_fails_alike(snap):
    meta, chunks, spans = snap
    want, want_err = per_node(meta, chunks, spans)
    for columns in (False, True):
        if columns and not all(len(r) == 9 for c in chunks for r in c):
            continue
        got, got_err = folded(meta, chunks, spans, columns)
        assert got_err is want_err
        if want is not None:
            assert view(got) == view(want)
            assert got.extra == want.extra


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 30), data=st.data())
def test_rows_a_session_writes_are_proved_and_taken_as_they_are(n, data):
    """A session's own rows (seq order, every edge older, each id once) pass the proof: the graph
    takes the folded table itself, and it is the graph from_snapshot builds."""
    rows = session_rows(n, data.draw)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=3)))
    chunks = [rows[a:b] for a, b in zip([0, *cuts], [*cuts, len(rows)])]
    fold = Fold()
    for rs in chunks:
        read_chunk(None, b"1" * 40, IndexRows(rs, None), READER, fold)
    assert fold.checked and fold.last == n
    fold = Fold()
    for rs in chunks:
        read_chunk(None, b"1" * 40, as_columns(rs, None), READER, fold)
    assert fold.checked and fold.last == n
    g = graph_from_snapshot(meta_of(rows[-1][0]), [(f"c{k}", None, b"1" * 40, IndexRows(rs, None), READER)
                                                   for k, rs in enumerate(chunks)])
    want, _ = per_node(meta_of(rows[-1][0]), chunks, [None] * len(chunks))
    assert view(g) == view(want)


@pytest.mark.parametrize("case", ["later_record", "out_of_order", "edge_forward", "unindexed"])
def test_what_the_proof_cannot_hold_goes_through_from_snapshot(case):
    """Rows the fold cannot prove leave `checked` False (and the load checks every node as before)."""
    rows = [["ROOT", 0, 1.0, "code", "session", "completed", "ROOT", None, 0],
            ["a", 1, 1.0, "user", "chat", "completed", "ROOT", "ROOT", 0],
            ["b", 2, 1.0, "llm", "chat", "completed", "ROOT", "a", 0]]
    if case == "later_record":
        rows.append(["a", 1, 1.0, "user", "chat", "completed", "ROOT", "ROOT", 0])
    elif case == "out_of_order":
        rows[1], rows[2] = rows[2], rows[1]
    elif case == "edge_forward":
        rows[1][6] = "b"
    fold = Fold()
    if case == "unindexed":  # ROOT's chunk indexed, the next one parsed whole (no index)
        read_chunk(None, b"1" * 40, IndexRows(rows[:1], None), READER, fold)
        assert fold.checked
        line = Call("user", "chat", output="x", predecessor=ROOT, id="a", seq=1).to_json()
        read_chunk(line + b"\n", b"2" * 40, None, None, fold)
    else:
        read_chunk(None, b"1" * 40, IndexRows(rows, None), READER, fold)
    assert not fold.checked


@pytest.mark.parametrize("field,ref", [("caller", 3), ("caller", -1), ("pred", 2), ("pred", -2)])
def test_a_column_ref_to_no_earlier_row_is_corrupt(field, ref):
    rows = [["ROOT", 0, 1.0, "code", "session", "completed", "ROOT", None, 0],
            ["a", 1, 1.0, "user", "chat", "completed", "ROOT", "ROOT", 0]]
    cols = as_columns(rows, None)
    getattr(cols, field)[1] = ref
    with pytest.raises(CorruptSnapshotError, match="names no earlier row"):
        graph_from_snapshot(meta_of("a"), [("c0", None, b"1" * 40, cols, READER)])


def test_a_column_index_is_what_commits_write_and_a_malformed_one_is_ignored():
    """node_index.build writes columns; rows_for reads them (and rows, written before); columns
    not of one length, a kind or spawn row out of range: the index does not describe its chunk."""
    a = Call("user", "a", output="one", predecessor=ROOT, seq=1, created_at=1.0).to_json()
    b = Call("llm", "b", output="two", predecessor=orjson.loads(a)["id"], seq=2, created_at=2.0,
             metadata={"spawn_branch_root": True}).to_json()
    blob = node_index.build(a + b"\n" + b + b"\n", b"1" * 40)
    d = orjson.loads(blob)
    assert "nodes" not in d and d["pred"] == [0, 1] and d["caller"] == [0, 0] and d["spawn"] == [1]
    cols = node_index.rows_for(blob, b"1" * 40)
    assert type(cols) is Columns and list(cols) == d["ids"] and cols.spans == d["spans"] and cols.spans[0] > 0
    for bad in ({"seqs": [1]}, {"kind": [0, 5]}, {"kind": [-1, 0]}, {"spawn": [2]}, {"spawn": [-1]},
                {"ids": "ab"}, {"kinds": None}, {"pred": [0]}):
        assert node_index.rows_for(orjson.dumps(d | bad), b"1" * 40) is None, bad
    rows = {"chunk": "1" * 40, "nodes": [[d["ids"][0], 1, 1.0, "user", "a", "completed", "ROOT", "ROOT", 0]]}
    assert type(node_index.rows_for(orjson.dumps(rows), b"1" * 40)) is IndexRows
