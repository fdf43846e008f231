"""The usage ledger (context/ledger.py) over random sessions built through the real store: turns,
tool calls, functions with inner calls, sub-agents on spawn branches, retries (forks), calls that
fail, calls whose usage arrives by a later update. Every `by` partitions the calls: nothing counted
twice, nothing dropped; the ledger kept up from change events equals one built cold; a branch's
scope is what a naive caller walk says it is."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag import ROOT, Call
from sessiondag.context.ledger import BY, Ledger, ledger_for, session_usage, usage_total
from sessiondag.core.prices import PICO
from sessiondag.core.usage import COST_KEY, node_usage
from sessiondag.store import SessionStore

FIELDS = ("calls", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "errors", "unpriced_calls")


def usage_md(k: int, priced: bool) -> dict:
    md = {"gen_ai.usage.input_tokens": 100 + k, "gen_ai.usage.output_tokens": 10 + k % 7,
          "gen_ai.usage.cached_input_tokens": k % 5, "sessiondag.latency_ms": 1.5, "provider": "p",
          "gen_ai.request.model": f"m{k % 3}"}
    md[COST_KEY] = {"usd": (37 * k + 1) / PICO, "pusd": 37 * k + 1, "price": "p/m"} if priced else "unknown"
    return md


OPS = st.lists(st.tuples(st.sampled_from(["turn", "tool", "function", "subagent", "retry", "late", "error", "summary"]),
                         st.integers(0, 10 ** 6), st.booleans()), min_size=1, max_size=40)


def build(s, ops) -> None:
    """Apply the ops to session `s` (a real store Session)."""
    k = 0
    user = None
    spawns: list[str] = []
    for op, r, priced in ops:
        k += 1
        head = s.head_id
        if op == "turn" or user is None or head == ROOT:
            user = s.append(Call("user", "u", output=f"t{k}", predecessor=head if head != ROOT else ROOT)).id
            s.append(Call("llm", "m", output="a", caller=user, predecessor=user, metadata=usage_md(k, priced)))
        elif op == "tool":
            llm = s.append(Call("llm", "m", output="", caller=user, predecessor=head, metadata=usage_md(k, priced)))
            s.append(Call("code", "read_file", input={"k": k}, output="x", caller=llm.id, predecessor=llm.id))
        elif op == "function":
            f = s.append(Call("code", "summarize", caller=head, predecessor=None, status="running"))
            s.append(Call("llm", "m", output="s", caller=f.id, predecessor=None, metadata=usage_md(k, priced)))
            inner = s.append(Call("code", "inner", caller=f.id, predecessor=None))
            s.append(Call("llm", "m", output="s", caller=inner.id, predecessor=None, metadata=usage_md(k + 1, priced)))
        elif op == "subagent":
            llm = s.append(Call("llm", "m", output="", caller=user, predecessor=head, metadata=usage_md(k, priced)))
            tool = s.append(Call("code", "spawn_agent", input={"task": "x"}, caller=llm.id, predecessor=llm.id))
            root = s.spawn_branch(tool.id, source="task", name=f"sub{k}", content="do x")
            spawns.append(root)
            a = s.append(Call("llm", "m", output="", caller=root, predecessor=root, metadata=usage_md(k + 2, priced)))
            t = s.append(Call("code", "grep", caller=a.id, predecessor=a.id, output="hit"))
            s.append(Call("llm", "m", output="done", caller=root, predecessor=t.id, metadata=usage_md(k + 3, priced)))
        elif op == "retry":
            chain = s.get_branch()
            users = [c for c in chain if c.role == "user" and c.caller == ROOT]
            u = users[r % len(users)]
            s.checkout(u.predecessor) if u.predecessor != ROOT else None
            pred = u.predecessor
            user = s.append(Call("user", "u", output=f"retry{k}", predecessor=pred)).id
            s.append(Call("llm", "m", output="b", caller=user, predecessor=user, metadata=usage_md(k, priced)))
        elif op == "late":  # a running call whose usage lands with its update; sometimes inside a sub-agent
            if spawns and r % 2:
                root = spawns[r % len(spawns)]
                tip = s.graph.spawn_heads.get(root, root)
                n = s.append(Call("llm", "m", output="", caller=root, predecessor=tip, status="running",
                                  metadata={"provider": "p", "gen_ai.request.model": "m1"}))
            else:
                n = s.append(Call("llm", "m", output="", caller=user, predecessor=head, status="running",
                                  metadata={"provider": "p", "gen_ai.request.model": "m1"}))
            s.update(n.id, status="completed", metadata=usage_md(k, priced))
        elif op == "summary" and head != ROOT:  # a compaction summary: an llm node no model made
            from sessiondag.context.compaction import compact
            chain = [c.id for c in s.get_branch() if c.name != "context/summary"]
            try:
                compact(s, chain[:2], f"summary {k}")
            except Exception:  # noqa: BLE001 - not every prefix can be compacted; the op is then a no-op
                pass
        elif op == "error":
            s.append(Call("llm", "m", output="", caller=user, predecessor=head, status="error",
                          metadata={"provider": "p", "gen_ai.request.model": "m2", "error": {"type": "E", "message": "x"}}))


def _sum(rows, f):
    return sum(r[f] for r in rows)


def _check_partition(result, llm_ids):
    rows, total = result["rows"], result["total"]
    for f in FIELDS:
        assert _sum(rows, f) == total[f], (result["by"], f)
    assert abs(_sum(rows, "priced_cost_usd") - total["priced_cost_usd"]) <= 1e-12 * max(1, len(rows))
    if result["by"] == "node":
        assert sorted(r["node_id"] for r in rows) == sorted(llm_ids)
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys))


def _naive_in_scope(g, nid, chain):
    """Walk caller edges up from `nid`: in scope if the first chain node met, or the first main-lane
    chain node met, is on `chain`."""
    def lane(c):
        while c.predecessor not in (None, ROOT):
            c = g.nodes[c.predecessor]
        return c.id if c.is_spawn_root else "main"
    first = main = None
    c = g.nodes[nid]
    while c.id != ROOT:
        if g.is_chain_node(c):
            first = first or c.id
            if lane(c) == "main":
                main = c.id
                break
        c = g.nodes[c.caller]
    return first in chain or main in chain


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS)
def test_every_by_partitions_the_session(tmp_path_factory, ops):
    store = SessionStore(tmp_path_factory.mktemp("state"))
    s = store.session(store.open_session(None, working_dir=None).id)
    with s.lock:
        warm = ledger_for(s)       # built empty, kept up by the store's events from here on
        build(s, ops)
        g = s.graph
        llm_ids = [c.id for c in g.nodes.values() if c.role == "llm" and c.name != "context/summary"]
        cold = Ledger(g)           # one pass over the finished graph
        for by in BY:
            r = session_usage(s, by)
            assert ledger_for(s) is warm
            _check_partition(r, llm_ids)
            assert r == cold.usage(by)
        t = warm.usage("node")["total"]
        assert usage_total(g) == t                 # the one-pass total of `sessions list`
        assert t["calls"] == len(llm_ids)
        assert t["input_tokens"] == sum(node_usage(g.nodes[i]).input_tokens for i in llm_ids)
        assert (t["unpriced_calls"] == 0) == (t["cost_usd"] is not None)
        # a branch's scope: its chain plus every call made on its behalf
        for b in s.list_branches():
            chain = {c.id for c in g.get_branch(b.head_id)}
            scoped = warm.usage("node", head_id=b.head_id)
            want = sorted(i for i in llm_ids if _naive_in_scope(g, i, chain))
            assert sorted(r["node_id"] for r in scoped["rows"]) == want
            for by in BY:
                _check_partition(warm.usage(by, head_id=b.head_id), want)
    store.close()


def test_branch_rows_charge_a_retry_to_the_branch_that_made_it(tmp_path):
    store = SessionStore(tmp_path / "state")
    s = store.session(store.open_session(None, working_dir=None).id)
    u1 = s.append(Call("user", "u", output="q", predecessor=ROOT))
    bad = s.append(Call("llm", "m", output="", caller=u1.id, predecessor=u1.id, status="error",
                        metadata={**usage_md(1, True), "error": {"type": "ProviderError", "message": "x"}}))
    u2 = s.append(Call("user", "u", output="q", predecessor=ROOT))  # the retry forks at the start
    good = s.append(Call("llm", "m", output="ok", caller=u2.id, predecessor=u2.id, metadata=usage_md(2, True)))
    rows = {r["head_id"]: r for r in session_usage(s, "branch")["rows"]}
    assert rows[bad.id]["calls"] == 1 and rows[bad.id]["errors"] == 1
    assert rows[good.id]["calls"] == 1 and rows[good.id]["errors"] == 0
    assert session_usage(s, "turn", head_id=good.id)["total"]["calls"] == 1
    store.close()


def test_missing_prices_are_unknown_not_zero(tmp_path):
    store = SessionStore(tmp_path / "state")
    s = store.session(store.open_session(None, working_dir=None).id)
    u = s.append(Call("user", "u", output="q", predecessor=ROOT))
    a = s.append(Call("llm", "m", output="", caller=u.id, predecessor=u.id, metadata=usage_md(1, True)))
    s.append(Call("llm", "m", output="", caller=u.id, predecessor=a.id, metadata=usage_md(2, False)))
    t = session_usage(s, "model")["total"]
    assert t["cost_usd"] is None and t["unpriced_calls"] == 1
    assert t["priced_cost_usd"] == 38 / PICO
    store.close()


def test_a_caller_cycle_is_refused_not_looped():
    """The graph refuses a snapshot whose callers do not precede their nodes, so caller walks end; the
    ledger bounds its walks anyway: a cycle (here made in memory, past the graph's checks) raises."""
    from sessiondag.core.errors import BrokenPredecessorChainError, InvalidNodeError
    from sessiondag.core.graph import Graph
    from sessiondag.core.model import make_root
    root = make_root(0.0)
    a = Call("code", "f", id="a", seq=1, caller="b", predecessor=None, status="completed")
    b = Call("code", "g", id="b", seq=2, caller="a", predecessor=None, status="completed")
    c = Call("llm", "m", id="c", seq=3, caller="a", predecessor=None, status="completed", metadata=usage_md(1, True))
    try:
        Graph.from_snapshot([root, a, b, c], head_id=ROOT, branch_names={}, spawn_heads={})
    except InvalidNodeError:
        pass
    else:
        raise AssertionError("the graph took a caller that does not precede its node")
    a.caller = ROOT
    g = Graph.from_snapshot([root, a, b, c], head_id=ROOT, branch_names={}, spawn_heads={})
    g.nodes["a"].caller = "b"  # a cycle a -> b -> a behind the graph's back
    try:
        Ledger(g)
    except BrokenPredecessorChainError as e:
        assert "cycle" in str(e)
    else:
        raise AssertionError("a caller cycle was walked without complaint")
