"""Properties over random session DAGs built through the real store."""

from __future__ import annotations

import os
import tempfile
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag import Call, ROOT
from sessiondag.context import cache as cache_mod
from sessiondag.context.compaction import compact
from sessiondag.context.graphinfo import anchor_of, is_summary
from sessiondag.context.messages import render_dag_messages
from sessiondag.context import render as render_mod
from sessiondag.context.render import render_context, root_level_ancestor
from sessiondag.core.errors import InvalidNodeError
from sessiondag.store import SessionStore

OPS = st.lists(st.tuples(st.sampled_from(["turn", "turn", "reply", "reply", "tool", "func", "inner",
                                          "spawn", "checkout", "compact", "finish", "commit"]),
                         st.integers(0, 10_000), st.integers(0, 10_000)), min_size=15, max_size=60)


def _chain_nodes(g):
    return [c for c in g.nodes.values() if c.id != ROOT and g.is_chain_node(c) and not is_summary(c)]


def _turn_user(g, x):
    """The user node whose turn chain node x belongs to (walking predecessors)."""
    c = x
    while True:
        if c.role == "user" and (c.caller == ROOT or c.is_spawn_root):
            return c
        if c.predecessor in (None, ROOT):
            return None
        c = g.nodes[c.predecessor]


def _apply(s, op, a, b):
    g = s.graph
    chain = sorted(_chain_nodes(g), key=lambda c: c.seq)
    pick = lambda xs, k: xs[k % len(xs)] if xs else None  # noqa: E731
    if op == "turn":
        x = pick(chain + [None], a)
        s.append(Call("user", "alice", output=f"u{a}", predecessor=x.id if x else ROOT))
    elif op == "reply" and chain:
        x = pick(chain, a)
        u = _turn_user(g, x)
        if u is not None:
            s.append(Call("llm", "m", output=f"r{b}", caller=u.id, predecessor=x.id))
    elif op == "tool":
        llms = [c for c in chain if c.role == "llm"]
        L = pick(llms, a)
        if L is not None:
            s.append(Call("code", "tool", input={"b": b}, output=f"t{b}", caller=L.id,
                          predecessor=L.id if b % 2 else None, metadata={"tool_call_id": f"c{b % 3}"}))
    elif op == "func":
        nodes = [c for c in g.nodes.values() if c.id != ROOT and not c.name.startswith("context/")]
        n = pick(sorted(nodes, key=lambda c: c.seq), a)
        if n is not None:
            md = {"expose": ["io", "full", "none"][b % 3]} if b % 4 else {}
            s.append(Call("code", f"fn{b % 2}", input=b, caller=n.id, status="running", metadata=md))
    elif op == "inner":
        codes = sorted((c for c in g.nodes.values() if c.role == "code" and c.id != ROOT
                        and not c.name.startswith("context/")), key=lambda c: c.seq)
        f = pick(codes, a)
        if f is not None:
            s.append(Call("llm", "m", input=f"q{b}", output=f"a{b}", caller=f.id))
    elif op == "spawn" and chain:
        s.spawn_branch(pick(chain, a).id, source="task", content=f"task {b}")
    elif op == "checkout" and chain:
        s.checkout(pick(chain, a).id)
    elif op == "finish":
        running = sorted((c for c in g.nodes.values() if c.status == "running"), key=lambda c: c.seq)
        c = pick(running, a)
        if c is not None:
            s.update(c.id, output=f"done{b}", status="completed")
    elif op == "commit":
        s.commit_turn()
    elif op == "compact":
        spine = [c for c in s.get_branch() if not c.name.startswith("context/")]
        if len(spine) >= 2:
            i = a % (len(spine) - 1)
            j = i + 1 + b % (len(spine) - i - 1) if len(spine) - i - 1 > 0 else i + 1
            try:
                compact(s, [c.id for c in spine[i:j]], f"summary {a}")
            except InvalidNodeError:
                pass


STATS: list[int] = []


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("SESSIONDAG_PROPERTY_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS, st.integers(0, 1000))
def test_rendered_nodes_hang_on_the_head_spine(ops, fpick):
    with mock.patch.dict(os.environ, AGING_ENV):  # restored afterwards (no fixture: hypothesis runs many examples)
        _check(ops, fpick)


AGING_ENV = {"SESSIONDAG_TOOL_AGING_TAIL_TURNS": "1", "SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS": "2"}


def _check(ops, fpick):
    with tempfile.TemporaryDirectory() as d:
        store = SessionStore(d)
        s = store.session(store.open_session(None, working_dir=None).id)
        try:
            for op, a, b in ops:
                _apply(s, op, a, b)
                if a % 3 == 0:  # warm the caches mid-way so later writes must invalidate them
                    rc = render_context(s)
                    for f in ("openai", "anthropic"):
                        render_dag_messages(rc, f, session=s)
            STATS.append(len(s.graph.nodes))
            g = s.graph
            heads = [b.head_id for b in s.list_branches()] + [g.head_id]
            for head in heads:
                spine = {c.id for c in s.get_branch(head)}
                rc = render_context(s, head)
                ids = [c.id for c in rc.nodes]
                assert len(ids) == len(set(ids))
                for c in rc.nodes:
                    if is_summary(c):
                        assert c.id == g.extra.get("active_summary")
                        continue
                    assert root_level_ancestor(g, c) in spine
                    assert anchor_of(g, c) in spine
                seqs = [c.seq for c in rc.nodes if not is_summary(c)]
                assert seqs == sorted(seqs)
                msgs = {f: orjson.dumps(render_dag_messages(rc, f, session=s)) for f in ("openai", "anthropic")}
                # a frame inside this render: only nodes on this chain, the frame among them
                codes = [c for c in rc.nodes if c.role == "code"]
                frame = codes[fpick % len(codes)].id if codes else None
                if frame is not None:
                    fr = render_context(s, head, frame=frame)
                    assert frame in {c.id for c in fr.nodes}
                    for c in fr.nodes:
                        assert is_summary(c) or root_level_ancestor(g, c) in spine
                    fmsgs = {f: orjson.dumps(render_dag_messages(fr, f, session=s)) for f in ("openai", "anthropic")}
                    render_mod.USE_PREFIX_MEMO = False
                    try:
                        fplain = render_context(s, head, frame=frame)
                        assert [c.id for c in fplain.nodes] == [c.id for c in fr.nodes]
                        assert fplain.manifest == fr.manifest
                        for f in ("openai", "anthropic"):
                            assert orjson.dumps(render_dag_messages(fplain, f, session=s)) == fmsgs[f]
                    finally:
                        render_mod.USE_PREFIX_MEMO = True
                # the warm cache renders exactly what a cold one does, and the prefix memo exactly
                # what the plain path does
                cache_mod.drop_cache(s)
                cold = render_context(s, head)
                assert [c.id for c in cold.nodes] == ids
                for f in ("openai", "anthropic"):
                    assert orjson.dumps(render_dag_messages(cold, f, session=s)) == msgs[f]
                render_mod.USE_PREFIX_MEMO = False
                try:
                    plain = render_context(s, head)
                    assert plain._memo is None and [c.id for c in plain.nodes] == ids
                    assert plain.manifest == rc.manifest
                    for f in ("openai", "anthropic"):
                        assert orjson.dumps(render_dag_messages(plain, f, session=s)) == msgs[f]
                finally:
                    render_mod.USE_PREFIX_MEMO = True
        finally:
            store.close()
