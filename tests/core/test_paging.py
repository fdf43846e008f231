"""BranchIndex (core/paging.py) against Graph.get_branch on random forked graphs, and the lazily
decoded node body (core/model.py): same values, same encoding, dropped encoding on change."""

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondag.core.errors import BrokenPredecessorChainError
from sessiondag.core.graph import Graph
from sessiondag.core.model import ROOT, Call, call_from_raw, make_root
from sessiondag.core.errors import InvalidCursorError
from sessiondag.core.paging import BranchIndex


def _add(g: Graph, c: Call) -> Call:
    g.check_append(c)
    c.seq = g.last_seq + 1
    g.apply_append(c)
    return c


@st.composite
def forked_graphs(draw):
    """A graph grown by appending each node after a random earlier chain node (or ROOT)."""
    g = Graph(make_root(1.0))
    chain = [ROOT]
    for i in range(draw(st.integers(1, 40))):
        p = draw(st.sampled_from(chain))
        c = _add(g, Call("user" if i % 2 == 0 else "llm", f"n{i}", predecessor=p))
        chain.append(c.id)
    return g, chain


@settings(max_examples=150, deadline=None)
@given(forked_graphs(), st.data())
def test_pages_of_every_head_match_get_branch(gc, data):
    g, chain = gc
    idx = BranchIndex(g)
    for _ in range(4):  # several heads in turn: the index is extended and cut back between them
        head = data.draw(st.sampled_from(chain))
        full = g.get_branch(head)
        assert idx.page(head).nodes == full
        limit = data.draw(st.integers(1, len(full) + 1)) if full else 1
        order = data.draw(st.sampled_from(["asc", "desc"]))
        got, cursor = [], None
        while True:
            kw = {"after": cursor} if order == "asc" else {"before": cursor}
            page = idx.page(head, limit=limit, order=order, **(kw if cursor else {}))
            assert page.total == len(full) and len(page.nodes) <= limit
            got += page.nodes
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert got == (full if order == "asc" else full[::-1])


def test_cursor_errors_and_broken_chains():
    g = Graph(make_root(1.0))
    a = _add(g, Call("user", "a", predecessor=ROOT))
    b = _add(g, Call("llm", "b", predecessor=a.id))
    fork = _add(g, Call("llm", "f", predecessor=a.id))
    idx = BranchIndex(g)
    with pytest.raises(InvalidCursorError, match="no such node"):
        idx.page(b.id, after="nope")
    with pytest.raises(InvalidCursorError, match="not on the branch"):
        idx.page(b.id, before=fork.id)
    with pytest.raises(InvalidCursorError, match="precedes"):
        idx.page(b.id, after=b.id, before=a.id)
    assert idx.page(ROOT).nodes == [] and idx.page(ROOT).total == 0
    g.nodes["x"] = Call("user", "x", id="x", seq=99, predecessor="gone")
    with pytest.raises(BrokenPredecessorChainError):
        BranchIndex(g).page("x")


def test_lazy_body_decodes_on_read_and_drops_its_encoding_on_change():
    c = Call("llm", "m", input={"q": [1, "é"]}, output="hi\n\"x\"", status="running", predecessor="p",
             reads=["r"], metadata={"spawn_branch_root": False, "k": {"n": None}}, seq=3, created_at=2.5)
    raw = c.to_json()
    lazy = call_from_raw(orjson.loads(raw), raw, {})
    assert lazy.encoded() is raw  # the stored line is the encoding: no re-serialization
    assert lazy == c and lazy.to_dict() == c.to_dict()
    assert (lazy.input, lazy.output, lazy.reads, lazy.metadata) == (c.input, c.output, c.reads, c.metadata)
    g = Graph(make_root(1.0))
    g.nodes[lazy.id] = lazy
    g.apply_update(lazy.id, {"output": "done", "status": "completed", "metadata": {"n": 1}})
    assert orjson.loads(lazy.encoded()) == {**c.to_dict(), "output": "done", "status": "completed",
                                            "metadata": {**c.metadata, "n": 1}}
    lazy2 = call_from_raw(orjson.loads(raw), raw, {})
    lazy2.metadata = {"spawn_branch_root": True}
    assert lazy2.is_spawn_root is False  # has a predecessor
    assert orjson.loads(lazy2.encoded())["metadata"] == {"spawn_branch_root": True}
    assert orjson.loads(lazy2.encoded())["output"] == c.output
