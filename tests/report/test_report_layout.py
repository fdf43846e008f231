"""The DAG picture's layout (report/layout.py) over random sessions: forks, retries, tool calls and
sub-agents on an in-memory graph (core.graph, the store's own invariants checked on every append)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from sessiondag.core.graph import Graph
from sessiondag.core.model import ROOT, Call, make_root
from sessiondag.report.layout import EDGE_SPAWN, Layout, assign_lanes, layout


def _add(g: Graph, c: Call, spawn: bool = False) -> Call:
    c.seq = g.last_seq + 1
    g.check_append(c, spawn=spawn)
    g.apply_append(c)
    return c


def build(ops: list[tuple[int, int]]) -> Graph:
    """Each op (kind, pick): 0 a turn after a chosen tip (pick among the chain nodes: a fork when it
    is not a tip), 1 a turn with a tool call, 2 a sub-agent spawned from a model call."""
    g = Graph(make_root(0.0))
    chain: list[str] = [ROOT]
    llms: list[str] = []
    for kind, pick in ops:
        if kind == 2 and llms:
            owner = llms[pick % len(llms)]
            tool = _add(g, Call("code", "spawn_agent", caller=owner, metadata={"tool_call_id": "c"}))
            root = _add(g, Call("user", "sub", caller=tool.id, metadata={"spawn_branch_root": True}), spawn=True)
            _add(g, Call("llm", "m", caller=root.id, predecessor=root.id))
            continue
        prev = chain[pick % len(chain)]
        u = _add(g, Call("user", "user", output="u", predecessor=prev))
        a = _add(g, Call("llm", "m", output="a", caller=u.id, predecessor=u.id))
        llms.append(a.id)
        last = a
        if kind == 1:
            t = _add(g, Call("code", "read_file", caller=a.id, predecessor=a.id, metadata={"tool_call_id": "t"}))
            last = _add(g, Call("llm", "m", output="b", caller=u.id, predecessor=t.id))
            llms.append(last.id)
        chain += [u.id, a.id] + ([last.id] if last is not a else [])
    return g


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 10_000)), max_size=40))
def test_layout_invariants(ops):
    g = build(ops)
    lay = layout(g)
    assert set(lay.rep) == set(g.nodes) - {ROOT}
    for i, c in enumerate(lay.rows):
        assert lay.rep[c.id] == i and c.role != "code"      # tool calls fold into their model call
        assert lay.parent[i] < i
        seg = lay.segments[lay.seg_of[i]]
        assert seg.start <= i <= seg.end
        if i != seg.start:
            assert lay.parent[i] == max(r for r in range(seg.start, i) if lay.seg_of[r] == lay.seg_of[i])
        else:
            assert lay.parent[i] == seg.parent_row
        if c.is_spawn_root:
            assert seg.edge == EDGE_SPAWN and lay.parent[i] >= 0
    for k, c in enumerate(g.nodes.values()):
        if c.role == "code" and c.metadata.get("tool_call_id") and c.caller != ROOT:
            assert lay.rep[c.id] == lay.rep[c.caller]
    by_lane: dict[int, list[tuple[int, int]]] = {}
    for s in lay.segments:
        busy = (s.parent_row if s.parent_row >= 0 else s.start, s.end)
        for other in by_lane.get(s.lane, ()):
            assert busy[0] > other[1] or busy[1] < other[0], "two segments share a lane at once"
        by_lane.setdefault(s.lane, []).append(busy)
    assert lay.lanes == max(by_lane, default=0) + 1 or not lay.segments


def test_a_retry_leaves_the_main_lane():
    g = build([(0, 0), (0, 2), (0, 2)])     # two turns, then a second answer to turn one: a fork
    lay = layout(g)
    forks = [s for s in lay.segments if s.parent_row >= 0]
    assert len(forks) == 1 and forks[0].lane == 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 10_000)), max_size=40), st.lists(st.integers(1, 6)))
def test_a_layout_grown_node_by_node_is_the_layout_built_at_once(ops, cuts):
    """The live viewer (report/live.py) adds new nodes to the layout it has, and assigns lanes after
    each batch: whatever the batches, the result is the one-pass layout of the whole graph."""
    g = build(ops)
    whole = layout(g)
    grown = Layout()
    nodes = sorted((c for c in g.nodes.values() if c.id != ROOT), key=lambda c: c.seq)
    i = 0
    for cut in cuts + [len(nodes)]:
        for c in nodes[i:i + cut]:
            grown.add(g, c)
        i += cut
        assign_lanes(grown)
    assert [c.id for c in grown.rows] == [c.id for c in whole.rows]
    assert (grown.rep, grown.parent, grown.seg_of, grown.lanes) == (whole.rep, whole.parent, whole.seg_of, whole.lanes)
    assert grown.segments == whole.segments
