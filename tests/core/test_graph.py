"""Graph invariants: the write rule, its legal exceptions, head rules and edge-only walks."""

import pytest

from sessiondag.core.errors import BrokenPredecessorChainError, InvalidNodeError, NotFoundError, PredecessorMissingError
from sessiondag.core.graph import SUMMARY_NAME, Graph
from sessiondag.core.model import ROOT, Call, make_root


def new_graph() -> Graph:
    return Graph(make_root(1.0))


def add(g: Graph, c: Call, *, spawn: bool = False) -> Call:
    g.check_append(c, spawn=spawn)
    c.seq = g.last_seq + 1
    g.apply_append(c)
    return c


def chat(g: Graph, n: int, start: str = ROOT) -> list[Call]:
    out, prev = [], start
    for i in range(n):
        c = add(g, Call("user" if i % 2 == 0 else "llm", f"m{i}", predecessor=prev))
        out.append(c)
        prev = c.id
    return out


def ids(calls):
    return [c.id for c in calls]


@pytest.mark.parametrize("role", ["user", "llm"])
def test_root_level_conversational_node_needs_a_predecessor(role):
    g = new_graph()
    chat(g, 2)
    before = dict(g.nodes)
    with pytest.raises(PredecessorMissingError) as ei:
        g.check_append(Call(role, "orphan"))
    assert ei.value.data() == {"role": role, "name": "orphan"}
    assert g.nodes == before


def test_first_node_and_root_fork_take_the_root_sentinel():
    g = new_graph()
    a = chat(g, 3)
    assert g.head_id == a[-1].id
    fork = add(g, Call("user", "retry-first", predecessor=ROOT))
    assert g.head_id == fork.id
    assert ids(g.get_branch()) == [fork.id]
    assert ids(g.get_branch(a[-1].id)) == ids(a)
    main = [b for b in g.list_branches() if b.main]
    assert [b.head_id for b in main] == [a[-1].id]


def test_root_sentinel_only_at_root_level():
    g = new_graph()
    u = chat(g, 1)[0]
    with pytest.raises(InvalidNodeError):
        g.check_append(Call("llm", "x", caller=u.id, predecessor=ROOT))


def test_spawn_roots_only_through_spawn_branch():
    g = new_graph()
    u, l = chat(g, 2)
    c = Call("user", "sub", caller=l.id, metadata={"source": "task", "spawn_branch_root": True})
    with pytest.raises(InvalidNodeError, match="spawn"):
        g.check_append(c)
    add(g, c, spawn=True)
    assert g.head_id == l.id  # a spawn does not steal the head
    assert g.spawn_heads == {c.id: c.id}
    s1 = add(g, Call("llm", "sub-reply", caller=c.id, predecessor=c.id))
    assert g.spawn_heads == {c.id: s1.id}
    assert g.head_id == l.id
    assert ids(g.get_branch(s1.id)) == [c.id, s1.id]  # stops at the spawn root: clean context
    spawn_tips = [b for b in g.list_branches() if b.spawn_root]
    assert [(b.head_id, b.spawn_root, b.main) for b in spawn_tips] == [(s1.id, c.id, False)]
    # spawn roots never appear among predecessor children
    assert c.id not in g.children_by_predecessor(l.id)


def test_ask_user_answer_inside_a_call_needs_no_predecessor():
    g = new_graph()
    u, l = chat(g, 2)
    tool = add(g, Call("code", "ask_user", caller=l.id, status="running"))
    ans = add(g, Call("user", "answer", input="which file?", output="a.py", caller=tool.id))
    assert ans.predecessor is None
    assert g.head_id == l.id
    assert ids(g.get_branch()) == [u.id, l.id]
    assert g.children_by_caller(tool.id) == [ans.id]
    with pytest.raises(InvalidNodeError):  # nested nodes are not branch positions
        g.check_checkout(ans.id)
    with pytest.raises(InvalidNodeError, match="chat chain"):
        g.check_append(Call("llm", "x", predecessor=ans.id))


def test_compaction_summary_joins_the_chain_beside_its_segment():
    g = new_graph()
    a = chat(g, 4)
    s = add(g, Call("llm", SUMMARY_NAME, predecessor=a[0].id, metadata={"covers_ids": ids(a[1:3])}))
    assert g.head_id == a[-1].id  # HEAD stays put
    assert [b.head_id for b in g.list_branches()] == [a[-1].id]
    assert ids(g.get_branch(s.id)) == [a[0].id, s.id]
    with pytest.raises(InvalidNodeError, match="summary"):
        g.check_append(Call("user", "x", predecessor=s.id))
    with pytest.raises(InvalidNodeError):
        g.check_checkout(s.id)
    summary_without_pred = Call("llm", SUMMARY_NAME)
    with pytest.raises(PredecessorMissingError):
        g.check_append(summary_without_pred)


@pytest.mark.parametrize("kwargs", [
    {"predecessor": "nope"}, {"caller": "nope", "predecessor": None}, {"caller": "nope", "predecessor": ROOT},
])
def test_missing_predecessor_or_caller_refused(kwargs):
    g = new_graph()
    chat(g, 2)
    with pytest.raises(InvalidNodeError, match="does not exist"):
        g.check_append(Call("user", "x", **kwargs))


def test_duplicate_id_refused():
    g = new_graph()
    u = chat(g, 1)[0]
    with pytest.raises(InvalidNodeError, match="exists"):
        g.check_append(Call("llm", "x", predecessor=u.id, id=u.id))


def test_fork_moves_head_and_retry_keeps_error_reachable():
    g = new_graph()
    u, l = chat(g, 2)
    u2 = add(g, Call("user", "q2", predecessor=l.id))
    bad = add(g, Call("llm", "reply", predecessor=u2.id, status="error",
                      metadata={"error": {"type": "E", "message": "m", "trace": ""}}))
    retry = add(g, Call("llm", "reply", predecessor=u2.id))
    assert g.head_id == retry.id
    assert ids(g.get_branch()) == [u.id, l.id, u2.id, retry.id]
    assert ids(g.get_branch(bad.id)) == [u.id, l.id, u2.id, bad.id]
    tips = {b.head_id: b for b in g.list_branches()}
    assert set(tips) == {bad.id, retry.id}
    assert tips[retry.id].main and tips[retry.id].current   # the retry that worked is the main line
    assert not tips[bad.id].main and tips[bad.id].status == "error"


def turn(g: Graph, pred: str, text: str, status: str = "completed") -> tuple[Call, Call]:
    u = add(g, Call("user", "user", output=text, predecessor=pred))
    return u, add(g, Call("llm", "reply", output="r", predecessor=u.id, status=status))


def main_of(g: Graph) -> str:
    (m,) = [b.head_id for b in g.list_branches() if b.main]
    return m


def test_the_main_line_follows_a_retried_turn_that_worked_and_only_that():
    g = new_graph()
    _, a1 = turn(g, ROOT, "one")
    _, bad = turn(g, a1.id, "two", status="error")
    assert main_of(g) == bad.id
    _, other = turn(g, a1.id, "something else")             # a different message is a fork, not a retry
    assert main_of(g) == bad.id
    _, running = turn(g, a1.id, "two", status="running")    # a retry still running is not chosen yet
    assert main_of(g) == bad.id
    g.apply_update(running.id, {"status": "error"})         # a retry that failed too
    assert main_of(g) == bad.id
    _, good = turn(g, a1.id, "two")
    assert main_of(g) == good.id
    _, later = turn(g, good.id, "three")                    # the main line goes on from the retry
    assert main_of(g) == later.id
    _, again = turn(g, a1.id, "two")                        # a second good retry: the first one stays
    assert main_of(g) == later.id and again.id != other.id


def test_a_provider_call_redone_inside_a_turn_does_not_fail_the_turn():
    g = new_graph()
    _, a1 = turn(g, ROOT, "one")
    u2, bad = turn(g, a1.id, "two", status="error")
    redo = add(g, Call("llm", "reply", output="r", predecessor=u2.id))   # the call redone, it worked
    _, rt = turn(g, a1.id, "two")                                      # and a retry of the whole turn
    assert main_of(g) == redo.id and rt.id != redo.id and bad.id != redo.id


def test_code_node_completing_on_the_chain_takes_the_head():
    g = new_graph()
    u, l = chat(g, 2)
    code = add(g, Call("code", "tool", predecessor=l.id, caller=l.id, status="running"))
    assert g.head_id == code.id
    g.check_checkout(u.id)
    g.apply_checkout(u.id)
    g.check_update(code.id, {"status": "completed", "output": 1})
    g.apply_update(code.id, {"status": "completed", "output": 1})
    assert g.head_id == u.id  # its predecessor is not the head: head stays
    code2 = add(g, Call("code", "tool2", predecessor=l.id, caller=l.id, status="running"))
    g.apply_checkout(l.id)
    g.apply_update(code2.id, {"status": "completed"})
    assert g.head_id == code2.id


def test_update_rules():
    g = new_graph()
    u, l = chat(g, 2)
    r = add(g, Call("llm", "x", predecessor=l.id, status="running"))
    for bad in [{"status": "done"}, {"name": "x"}, {"predecessor": None}, {"metadata": []},
                {"metadata": {"spawn_branch_root": True}}]:
        with pytest.raises(InvalidNodeError):
            g.check_update(r.id, bad)
    with pytest.raises(InvalidNodeError):
        g.check_update(ROOT, {"output": 1})
    with pytest.raises(NotFoundError):
        g.check_update("nope", {"output": 1})
    g.check_update(r.id, {"status": "cancelled"})
    g.apply_update(r.id, {"status": "cancelled", "metadata": {"a": 1}})
    g.apply_update(r.id, {"metadata": {"b": 2}})
    assert r.metadata == {"a": 1, "b": 2}
    with pytest.raises(InvalidNodeError, match="terminal"):
        g.check_update(r.id, {"status": "running"})
    g.check_update(r.id, {"status": "cancelled", "output": "late"})  # same terminal status is fine


def test_usage_follows_appends_and_updates():
    g = new_graph()
    u = chat(g, 1)[0]
    l = add(g, Call("llm", "m", predecessor=u.id, status="running"))
    assert g.usage_total == [0, 0]
    g.apply_update(l.id, {"status": "completed",
                          "metadata": {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 4}})
    add(g, Call("llm", "m2", predecessor=l.id, metadata={"gen_ai.usage.input_tokens": 1}))
    assert g.usage_total == [11, 4]


def test_branch_names_follow_their_tip():
    g = new_graph()
    a = chat(g, 2)
    g.check_name(a[1].id, "main-line")
    g.apply_name(a[1].id, "main-line")
    b = add(g, Call("user", "next", predecessor=a[1].id))
    assert g.branch_names == {b.id: "main-line"}
    fork = add(g, Call("user", "alt", predecessor=a[1].id))
    assert g.branch_names == {b.id: "main-line"}  # a fork does not take the name
    g.apply_name(fork.id, "main-line")             # names are unique: it moves
    assert g.branch_names == {fork.id: "main-line"}
    g.apply_name(fork.id, None)
    assert g.branch_names == {}
    with pytest.raises(InvalidNodeError):
        g.check_name(fork.id, "")


def test_names_follow_tip_when_index_is_not_built_yet():
    g = new_graph()
    a = chat(g, 2)
    g.apply_name(a[1].id, "n")
    assert g._by_pred is None
    b = add(g, Call("user", "next", predecessor=a[1].id))
    assert g.branch_names == {b.id: "n"}
    assert g.children_by_predecessor(a[1].id) == [b.id]


# --- broken data built by hand (apply without check): walks surface it, never guess ----------

def test_broken_chain_missing_predecessor_edge():
    g = new_graph()
    a = chat(g, 2)
    orphan = Call("user", "orphan", seq=g.last_seq + 1)
    g.apply_append(orphan)  # bypasses check_append, like a hand-edited file would
    tail = Call("llm", "x", predecessor=orphan.id, seq=g.last_seq + 1)
    g.apply_append(tail)
    with pytest.raises(BrokenPredecessorChainError) as ei:
        g.get_branch(tail.id)
    assert ei.value.node_id == orphan.id and ei.value.data() == {"node_id": orphan.id}
    assert ids(g.get_branch(a[1].id)) == ids(a)


def test_broken_chain_dangling_and_cyclic_predecessor():
    g = new_graph()
    a = chat(g, 2)
    dangling = Call("llm", "d", predecessor="gone", seq=g.last_seq + 1)
    g.apply_append(dangling)
    with pytest.raises(BrokenPredecessorChainError) as ei:
        g.get_branch(dangling.id)
    assert ei.value.node_id == dangling.id
    a[0].predecessor = a[1].id  # a cycle
    with pytest.raises(BrokenPredecessorChainError) as ei:
        g.get_branch(a[1].id)
    assert ei.value.node_id == a[0].id


def test_get_branch_of_root_and_unknown():
    g = new_graph()
    assert g.get_branch() == []
    with pytest.raises(NotFoundError):
        g.get_branch("nope")


def test_descendants_by_caller_depth_first():
    g = new_graph()
    u, l = chat(g, 2)
    t1 = add(g, Call("code", "t1", caller=l.id))
    t11 = add(g, Call("code", "t11", caller=t1.id))
    t2 = add(g, Call("code", "t2", caller=l.id))
    assert ids(g.descendants_by_caller(l.id)) == [t1.id, t11.id, t2.id]
