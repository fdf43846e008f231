"""session/get_branch paging through a real daemon: pages in both directions concatenate to the
branch (forks, a root fork, a spawn branch, nodes from the snapshot and from the journal tail, an
updated node), invalid cursors and params get typed errors, and no params still means the whole
branch. Every answer is validated against rpc_schema."""

from __future__ import annotations

import os
import random
import signal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiondag import ROOT, Call
from sessiondag.store import SessionStore
from sessiondag_client import InvalidCursorError, InvalidParamsError
from sessiondag_client.sync import SyncClient

from e2e_support import DaemonProc, SchemaCheck

SID = "paged"


def _build(state: str, work: str) -> None:
    """A committed session with forks, a root fork, a spawn branch and tool calls off the chain;
    its last nodes stay in the journal (not committed)."""
    rng = random.Random(8)
    store = SessionStore(state)
    store.start_session(SID, working_dir=work)
    s = store.session(SID)
    main = []
    head = ROOT
    for i in range(70):
        role = "user" if i % 2 == 0 else "llm"
        c = s.append(Call(role, "chat", output=f"main {i} " + "w" * rng.randrange(0, 300), predecessor=head,
                          metadata={"i": i, "nested": {"k": [i, None, "é\n\"q\""]}}))
        head = c.id
        main.append(c.id)
        if role == "llm" and i % 10 == 1:
            s.append(Call("code", "tool", input={"q": i}, output="result", caller=c.id,
                          metadata={"tool_call_id": f"t{i}"}))
        if i % 17 == 16:
            s.commit_turn()
    for at in (5, 30, 51):  # forks off the main chain; the head follows each fork, then comes back
        p = main[at]
        for j in range(rng.randrange(3, 12)):
            p = s.append(Call("user" if j % 2 == 0 else "llm", "fork", output=f"fork {at}.{j}", predecessor=p)).id
        s.commit_turn()
    p = ROOT
    for j in range(6):  # an explicit root fork
        p = s.append(Call("user" if j % 2 == 0 else "llm", "rootfork", output=f"rf {j}", predecessor=p)).id
    sp = s.spawn_branch(main[9], source="task", name="sub", content="sub task")
    p = sp
    for j in range(7):
        p = s.append(Call("llm" if j % 2 == 0 else "user", "sub", output=f"sub {j}", predecessor=p)).id
    s.commit_turn()
    s.checkout(main[-1])
    for j in range(5):  # journal tail: never committed before the daemon opens the session
        s.append(Call("user" if j % 2 == 0 else "llm", "tail", output=f"tail {j}", predecessor=s.head_id))
    store.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("paging")
    state, work = str(root / "state"), str(root / "work")
    os.makedirs(work)
    _build(state, work)
    env = dict(os.environ, SESSIONDAG_HOME=str(root / "home"), XDG_RUNTIME_DIR=str(root))
    d = DaemonProc(["--socket", str(root / "d.sock"), "--state-dir", state], env=env)
    check = SchemaCheck()
    c = None
    try:
        c = SyncClient.connect(d.socket)
        c.inner.observer = check
        c.open(SID, working_dir=work)
        # through the daemon: extend the main branch and change a node loaded from the snapshot
        head = c.get_branch(SID)[-1].id
        for j in range(3):
            n, head = c.append(SID, {"role": "user" if j % 2 == 0 else "llm", "name": "rpc",
                                     "output": f"rpc {j}", "predecessor": head})
        first_llm = next(n for n in c.get_branch(SID) if n.role == "llm")
        c.update(SID, first_llm.id, output="changed over RPC", metadata={"changed": True})
        yield {"client": c, "state": state, "check": check, "changed": first_llm.id}
    finally:
        if c is not None:
            c.close()
        d.stop(signal.SIGTERM)
    check.assert_ok()


def _library_view(state: str) -> tuple[dict, list[str]]:
    """Branches as another process sees them: {head id: [node dicts, start → head]} for every tip
    and some mid-chain nodes."""
    s = SessionStore(state).session(SID)
    g = s.graph
    heads = [b.head_id for b in g.list_branches()]
    main = g.get_branch(g.head_id)
    heads += [main[0].id, main[len(main) // 2].id, ROOT]
    return {h: [c.to_dict() for c in g.get_branch(h)] for h in heads}, heads


@pytest.fixture(scope="module")
def branches(daemon):
    view, heads = _library_view(daemon["state"])
    return view, heads


def test_no_params_is_the_whole_branch_as_before(daemon, branches):
    c = daemon["client"]
    view, heads = branches
    for h in heads:
        page = c.get_branch_page(SID, h)
        assert [n.to_dict() for n in page.nodes] == view[h]
        assert page.next_cursor is None and page.total == len(view[h]) and page.head_id == h
    whole = c.call("session/get_branch", {"session_id": SID})
    assert set(whole) == {"nodes", "head_id", "next_cursor", "total"}
    assert whole["nodes"] == view[whole["head_id"]]  # default: HEAD
    changed = next(n for n in whole["nodes"] if n["id"] == daemon["changed"])
    assert changed["output"] == "changed over RPC" and changed["metadata"]["changed"] is True


def _page_all(c, head, order, limit, first_cursor, bound):
    key, other = ("after", "before") if order == "asc" else ("before", "after")
    got, cursor, pages = [], first_cursor, 0
    while True:
        kw = {key: cursor, other: bound, "limit": limit, "order": order}
        page = c.get_branch_page(SID, head, **{k: v for k, v in kw.items() if v is not None})
        assert page.head_id == head
        if limit is not None:
            assert len(page.nodes) <= limit
            if page.next_cursor is not None:
                assert len(page.nodes) == limit
        got += [n.to_dict() for n in page.nodes]
        pages += 1
        if page.next_cursor is None:
            return got, pages
        assert page.next_cursor == page.nodes[-1].id
        cursor = page.next_cursor


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_pages_concatenate_to_the_branch(daemon, branches, data):
    c = daemon["client"]
    view, heads = branches
    head = data.draw(st.sampled_from([h for h in heads if h != ROOT]))
    full = view[head]
    n = len(full)
    order = data.draw(st.sampled_from(["asc", "desc"]))
    limit = data.draw(st.one_of(st.none(), st.integers(1, n + 2)))
    # an optional starting cursor and an optional far bound, both on the branch
    i = data.draw(st.one_of(st.none(), st.integers(0, n - 1)))
    j = data.draw(st.one_of(st.none(), st.integers(0, n - 1)))
    if order == "asc":
        lo = 0 if i is None else i + 1
        hi = n if j is None or j < lo else j
        j = None if j is None or j < lo else j
        expect = full[lo:hi]
    else:
        hi = n if i is None else i
        lo = 0 if j is None or j >= hi else j + 1
        j = None if j is None or j >= hi else j
        expect = full[lo:hi][::-1]
    got, pages = _page_all(c, head, order, limit, None if i is None else full[i]["id"],
                           None if j is None else full[j]["id"])
    assert got == expect
    if limit is not None:
        assert pages == max(1, -(-len(expect) // limit))


def test_tail_first_page_is_the_newest_nodes(daemon, branches):
    c = daemon["client"]
    view, heads = branches
    head = heads[0]
    page = c.get_branch_page(SID, head, limit=4, order="desc")
    assert [n.to_dict() for n in page.nodes] == view[head][::-1][:4]
    assert page.next_cursor == page.nodes[-1].id and page.total == len(view[head])


def test_invalid_cursors_are_typed_errors(daemon, branches):
    c = daemon["client"]
    view, heads = branches
    main = view[heads[0]]
    other = next(h for h in heads if h != ROOT and view[h] and view[h][0]["id"] != main[0]["id"])
    off_branch = view[other][-1]["id"]
    cases = [
        ({"after": "no-such-node"}, "no such node"),
        ({"before": off_branch}, "not on the branch"),
        ({"after": main[-1]["id"], "before": main[0]["id"]}, "precedes"),
        ({"after": ROOT}, "not on the branch"),
    ]
    for kw, why in cases:
        with pytest.raises(InvalidCursorError) as e:
            c.get_branch_page(SID, heads[0], **kw)
        assert why in e.value.why and e.value.rpc_code == -32040
    # a cursor beyond the requested head on the same chain is off that branch too
    with pytest.raises(InvalidCursorError):
        c.get_branch_page(SID, main[3]["id"], after=main[10]["id"])
    for params in ({"limit": 0}, {"limit": -3}, {"limit": True}, {"limit": "5"}, {"order": "up"},
                   {"before": 7}, {"after": ""}, {"cursor": "x"}):
        with pytest.raises(InvalidParamsError):
            c.call("session/get_branch", {"session_id": SID, **params})
    assert c.ping() == {}
