import io

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag.core.model import ROOT
from sessiondag.runtime import AskUserUnavailableError, Runtime, allow_policy, run_task, terminal_handler
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.store import SessionStore


def test_terminal_handler_reads_a_line_and_prompts_on_the_given_stream():
    out = io.StringIO()
    h = terminal_handler(io.StringIO("blue\n"), out)
    assert h("Which color?", ["red", "blue"]) == "blue"
    assert "Which color?" in out.getvalue() and "red, blue" in out.getvalue()
    with pytest.raises(AskUserUnavailableError):
        terminal_handler(io.StringIO(""), io.StringIO())("again?")


TOOLS = st.sampled_from([
    {"name": "list_dir", "arguments": {}},
    {"name": "read_file", "arguments": {"path": "a.txt"}},
    {"name": "read_file", "arguments": {"path": "../etc/passwd"}},
    {"name": "write_file", "arguments": {"path": "b.txt", "content": "x"}},
    {"name": "no_such_tool", "arguments": {}},
    {"name": "search_text", "arguments": {"pattern": "a"}},
])
STEP = st.fixed_dictionaries({"text": st.text(max_size=20), "tool_calls": st.lists(TOOLS, min_size=1, max_size=3)})
END = st.one_of(st.fixed_dictionaries({"text": st.text(max_size=20)}),
                st.fixed_dictionaries({"text": st.text(max_size=20), "error": st.just("boom")}))


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, max_size=4), end=END, allow=st.sets(st.sampled_from(["write", "run"])))
def test_any_scripted_turn_leaves_a_well_formed_committed_chain(tmp_path_factory, steps, end, allow):
    base = tmp_path_factory.mktemp("prop")
    wd = base / "wd"
    wd.mkdir()
    (wd / "a.txt").write_text("abc\n")
    store = SessionStore(base / "state")
    rt = Runtime(ScriptedProvider(steps + [end]), permissions=allow_policy(allow), subagents=False)
    r = run_task("go", working_dir=wd, store=store, runtime=rt)
    s = store.session(r.session_id)
    chain = s.get_branch()
    assert chain[-1].id == r.head_id == s.head_id and not s.open_turn
    assert r.stop_reason == ("error" if end.get("error") else "end_turn")
    user = s.get_node(r.user_node_id)
    assert (user.caller, user.role) == (ROOT, "user")
    turn = chain[chain.index(user) + 1:]
    assert all(c.status != "running" for c in s.graph.nodes.values())
    n_tools = sum(len(x["tool_calls"]) for x in steps)
    assert [c.role for c in turn].count("llm") == len(steps) + 1
    assert [c.role for c in turn].count("code") == n_tools
    owner = None
    for c in turn:
        if c.role == "llm":
            assert c.caller == user.id
            owner = c
        else:
            assert c.caller == owner.id and "tool_call_id" in c.metadata
    assert (wd / "b.txt").exists() == ("write" in allow and any(
        t["name"] == "write_file" for x in steps for t in x["tool_calls"]))
    assert not (base / "etc").exists()
    store.close()
