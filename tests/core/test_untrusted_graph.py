"""Graph.from_untrusted (a clone's check of a remote snapshot, in bulk) accepts exactly the node
lists that check_append over each node in turn accepts, and builds the same nodes: hypothesis
draws lists with edges to earlier, later, missing and sentinel nodes, summaries as predecessors,
spawn roots, duplicate ids and fields nested past the limit."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from sessiondag import ROOT, Call
from sessiondag.core.depth import MAX_DEPTH
from sessiondag.core.errors import SessionDagError
from sessiondag.core.graph import SUMMARY_NAME, Graph
from sessiondag.core.model import make_root


def _deep(n: int):
    v: object = "x"
    for _ in range(n):
        v = [v]
    return v


@st.composite
def node_lists(draw):
    """A valid chat chain (each node after the previous one, called by ROOT), each node drawn
    plain or with one thing changed: its edges, id, name, spawn flag or nesting."""
    count = draw(st.integers(1, 12))
    ids = [f"n{i}" for i in range(count)]
    calls = [make_root(1.0)]
    for i, nid in enumerate(ids):
        earlier = [ROOT] + ids[:i]
        node = dict(role="user", name="a", id=nid, seq=i + 1, caller=ROOT, predecessor=earlier[-1],
                    output="ok", metadata={})
        change = draw(st.sampled_from(["none", "none", "none", "pred", "caller", "id", "name", "spawn", "deep"]))
        odd = st.sampled_from(earlier + ["missing"] + ids[i + 1:i + 2])
        if change == "pred":
            node["predecessor"] = draw(st.one_of(st.none(), odd))
        elif change == "caller":
            node["caller"] = draw(odd)
            node["role"] = draw(st.sampled_from(["llm", "code"]))
        elif change == "id":
            node["id"] = ids[0]
        elif change == "name":
            node["name"] = SUMMARY_NAME
        elif change == "spawn":
            node["metadata"], node["predecessor"] = {"spawn_branch_root": True}, draw(st.sampled_from([None, ROOT]))
        elif change == "deep":
            field = draw(st.sampled_from(["output", "input", "metadata"]))
            value = _deep(draw(st.sampled_from([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])))
            node[field] = {"x": value} if field == "metadata" else value
        calls.append(Call(node.pop("role"), node.pop("name"), **node))
    return calls


def _one_by_one(calls: list[Call]) -> Graph | None:
    g = Graph(calls[0])
    try:
        for c in calls[1:]:
            g.check_append(c, spawn=c.is_spawn_root)
            g.apply_append(c)
    except SessionDagError:
        return None
    return g


def _bulk(calls: list[Call]) -> Graph | None:
    try:
        return Graph.from_untrusted(calls, head_id=calls[-1].id)
    except SessionDagError:
        return None


@settings(max_examples=300, deadline=None)
@given(node_lists())
def test_bulk_accepts_what_appends_one_by_one_accept(calls):
    seq, bulk = _one_by_one(calls), _bulk(calls)
    assert (seq is None) == (bulk is None)
    if seq is not None and bulk is not None:
        assert {i: c.to_dict() for i, c in seq.nodes.items()} == {i: c.to_dict() for i, c in bulk.nodes.items()}
        assert seq.last_seq == bulk.last_seq and seq.usage_total == bulk.usage_total
