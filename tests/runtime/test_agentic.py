import os
import threading

import pytest

from agentic_fixtures import (SUMMARIZE_MARK, calls_explode, child_asks, child_fail, child_hang, child_summarize, confirm,
                              outer, summarize)
from sessiondag.core.model import ROOT
from sessiondag.runtime import (AskUserUnavailableError, RunCancelled, Runtime, SubprocessBodyError,
                                answers_file_handler, refuse_handler, run_turn, session_context)
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.store import SessionStore
from waiting import wait_until


def alive(pid: int) -> bool:
    """True if `pid` runs (a zombie waiting for init to reap it counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def by_name(s, name):
    return [c for c in s.graph.nodes.values() if c.name == name]


def test_top_level_function_is_a_committed_chain_node_and_docstring_reaches_provider(store, workdir):
    rt = Runtime(ScriptedProvider([{"text": "A sentence."}]))
    with session_context(working_dir=workdir, store=store, runtime=rt) as h:
        assert summarize("long text") == "A sentence."
    s = h.session
    (fn,) = by_name(s, "summarize")
    assert (fn.caller, fn.status) == (ROOT, "completed")
    # outside any chat turn the call still pins the project system prompt first, as a turn does
    assert s.get_node(fn.predecessor).name == "context/system_prompt"
    assert fn.input == {"text": "long text"} and fn.output == "A sentence." and fn.metadata["expose"] == "io"
    (llm,) = [c for c in s.graph.nodes.values() if c.role == "llm"]
    assert (llm.caller, llm.predecessor, llm.input) == (fn.id, None, "Summarize: long text")
    assert llm.metadata["instructions_from"] == ["summarize"]
    msgs = rt.provider.requests[0]["messages"]
    assert any(m["role"] == "system" and SUMMARIZE_MARK in m["content"] for m in msgs)
    assert msgs[-1] == {"role": "user", "content": "Summarize: long text"}
    assert s.head_id == fn.id and not s.open_turn


def test_nested_calls_are_attributed_to_their_caller(store, workdir):
    with session_context(working_dir=workdir, store=store, create_runtime_if_none=False) as h:
        assert outer(3) == 6 + 8
    s = h.session
    (o,) = by_name(s, "outer")
    inners = by_name(s, "inner")
    assert [(c.caller, c.predecessor, c.input, c.output) for c in inners] == [
        (o.id, None, {"x": 3}, 6), (o.id, None, {"x": 4}, 8)]
    assert o.metadata["expose"] == "full" and "expose" not in inners[0].metadata


def test_exceptions_become_error_nodes_all_the_way_up_and_reraise(store, workdir):
    with session_context(working_dir=workdir, store=store, create_runtime_if_none=False) as h:
        with pytest.raises(ValueError, match="deep failure"):
            calls_explode()
    s = h.session
    (top,), (ex,) = by_name(s, "calls_explode"), by_name(s, "explode")
    assert ex.caller == top.id and ex.status == top.status == "error"
    assert ex.metadata["error"]["type"] == "ValueError" and ex.metadata["error"]["message"] == "deep failure"
    assert "raise ValueError(msg)" in ex.metadata["error"]["trace"]
    assert not s.open_turn and s.head_id == top.id


def test_outside_any_session_builds_a_real_adhoc_session(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert outer(1) == 2 + 4
    sid = outer.last_session_id
    assert sid
    s = SessionStore().session(sid)  # SESSIONDAG_HOME points into tmp_path
    assert [c.name for c in s.get_branch()] == ["context/system_prompt", "outer"]
    assert len(by_name(s, "inner")) == 2


def test_function_as_a_tool_inside_a_turn_hangs_under_the_tool_node(store, workdir):
    from sessiondag.runtime.tools import Tool
    tool = Tool.from_function(summarize)
    assert tool.spec()["function"] == {
        "name": "summarize", "description": summarize.__doc__.strip(),
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                       "additionalProperties": False}}
    script = [{"text": "", "tool_calls": [{"name": "summarize", "arguments": {"text": "abc"}}]},
              {"match": "Summarize: abc", "text": "short"}, {"match": "short", "text": "final"}]
    rt = Runtime(ScriptedProvider(script), extra_tools=(tool,))
    with session_context(working_dir=workdir, store=store, runtime=rt) as h:
        r = run_turn("please summarize")
    s = h.session
    assert r.stop_reason == "end_turn" and r.text == "final"
    tnode = [c for c in s.get_branch() if c.role == "code" and c.name == "summarize"][0]
    fn = [c for c in by_name(s, "summarize") if c.id != tnode.id][0]
    assert fn.caller == tnode.id and fn.predecessor is None
    inner_llm = [c for c in s.graph.nodes.values() if c.role == "llm" and c.caller == fn.id][0]
    assert inner_llm.output == "short"
    second = rt.provider.requests[1]["messages"]
    assert any(m["role"] == "system" and SUMMARIZE_MARK in m["content"] for m in second)
    injected = "Instructions of `summarize`"
    assert any(injected in str(m.get("content")) for m in second)
    assert not any(injected in str(m.get("content")) for m in rt.provider.requests[2]["messages"])


def test_ask_user_records_the_answer_inside_the_call(store, workdir, tmp_path):
    answers = tmp_path / "answers.yaml"
    answers.write_text("'Deploy now?': 'yes'\n")
    rt = Runtime(ScriptedProvider(), ask_user=answers_file_handler(answers))
    with session_context(working_dir=workdir, store=store, runtime=rt) as h:
        assert confirm("Deploy now?") == "yes"
    s = h.session
    (fn,) = by_name(s, "confirm")
    (ans,) = [c for c in s.graph.nodes.values() if c.role == "user"]
    assert (ans.caller, ans.predecessor, ans.input, ans.output) == (
        fn.id, None, {"question": "Deploy now?", "options": ["yes", "no"]}, "yes")
    rt2 = Runtime(ScriptedProvider(), ask_user=refuse_handler)
    with session_context(working_dir=workdir, store=store, runtime=rt2) as h2:
        with pytest.raises(AskUserUnavailableError):
            confirm("Deploy now?")
    assert by_name(h2.session, "confirm")[0].status == "error"


@pytest.mark.process
def test_subprocess_body_writes_through_its_own_store_and_parent_rereads(store, workdir):
    rt = Runtime(ScriptedProvider([{"match": "Child summarize", "text": "child says hi"}]))
    with session_context(working_dir=workdir, store=store, runtime=rt) as h:
        out = child_summarize("xyz")
    assert out["summary"] == "child says hi" and out["pid"] != os.getpid() and out["inner"] == 10
    s = h.session
    (fn,) = by_name(s, "child_summarize")
    assert fn.status == "completed" and fn.output == out and fn.metadata["subprocess"] is True
    kids = [s.get_node(k) for k in s.graph.children_by_caller(fn.id)]
    assert sorted((c.role, c.name) for c in kids) == [("code", "inner"), ("llm", "scripted")]
    llm = [c for c in kids if c.role == "llm"][0]
    assert llm.metadata["instructions_from"] == ["child_summarize"]
    assert not s.open_turn and rt.provider.requests == []  # the child called its own provider copy


@pytest.mark.process
def test_subprocess_body_error_is_an_error_node(store, workdir):
    with session_context(working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider())) as h:
        with pytest.raises(SubprocessBodyError, match="KeyError"):
            child_fail()
    (fn,) = by_name(h.session, "child_fail")
    assert fn.status == "error" and fn.metadata["error"]["type"] == "SubprocessBodyError"


@pytest.mark.process
def test_stopping_a_subprocess_body_kills_its_group_and_records_cancelled(store, workdir, tmp_path):
    ready = tmp_path / "ready"
    rt = Runtime(ScriptedProvider())
    err = {}

    def go():
        with session_context(working_dir=workdir, store=store, runtime=rt) as h:
            err["h"] = h
            try:
                child_hang(str(ready))
            except RunCancelled as e:
                err["e"] = e

    t = threading.Thread(target=go)
    t.start()
    wait_until(ready.exists, "the child's readiness file")
    child_pid, grandchild_pid = map(int, ready.read_text().split())
    assert alive(child_pid) and alive(grandchild_pid)
    rt.cancel()
    t.join(30)
    assert isinstance(err.get("e"), RunCancelled)
    for pid in (child_pid, grandchild_pid):
        assert not alive(pid)
    (fn,) = by_name(err["h"].session, "child_hang")
    assert fn.status == "cancelled"


@pytest.mark.process
def test_subprocess_body_asks_the_callers_handlers(store, workdir):
    """ask_user and permission checks in a spawned body are answered by the parent's runtime."""
    asked, checked = [], []

    def ask(question, options):
        asked.append((question, os.getpid()))
        return "forty-two"

    def permissions(kind, detail):
        checked.append((kind, detail, os.getpid()))
        return False

    rt = Runtime(ScriptedProvider(), ask_user=ask, permissions=permissions)
    with session_context(working_dir=workdir, store=store, runtime=rt) as h:
        out = child_asks("what is the answer?")
    assert out["pid"] != os.getpid()
    assert out == {"answer": "forty-two", "write_allowed": False, "pid": out["pid"]}
    assert asked == [("what is the answer?", os.getpid())]
    assert checked == [("write", {"path": "out.txt"}, os.getpid())]
    (fn,) = by_name(h.session, "child_asks")
    answers = [h.session.get_node(k) for k in h.session.graph.children_by_caller(fn.id)]
    assert [(c.role, c.input["question"], c.output) for c in answers] == [("user", "what is the answer?", "forty-two")]


@pytest.mark.process
def test_subprocess_body_gets_the_callers_refusal_as_a_typed_error(store, workdir):
    rt = Runtime(ScriptedProvider(), ask_user=refuse_handler)
    with session_context(working_dir=workdir, store=store, runtime=rt) as h:
        with pytest.raises(SubprocessBodyError, match="AskUserUnavailableError"):
            child_asks("anyone there?")
    (fn,) = by_name(h.session, "child_asks")
    assert fn.status == "error"
    (answer,) = [h.session.get_node(k) for k in h.session.graph.children_by_caller(fn.id)]
    assert answer.status == "error" and answer.metadata["error"]["type"] == "AskUserUnavailableError"


@pytest.mark.process
def test_subprocess_body_without_a_runtime_gets_the_default_handlers(workdir, tmp_path, monkeypatch):
    """No runtime in the caller's context: the parent answers the body's relay with the defaults an
    in-process call gets (agent.answers, agent.allow of the store's settings: $SESSIONDAG_ANSWERS,
    $SESSIONDAG_ALLOW when it was built), not with a refusal."""
    answers = tmp_path / "answers.json"
    answers.write_text('["from the answers file"]')
    monkeypatch.setenv("SESSIONDAG_ANSWERS", str(answers))
    monkeypatch.setenv("SESSIONDAG_ALLOW", "write")
    store = SessionStore(tmp_path / "state-with-defaults")   # resolves those settings, once
    with session_context(working_dir=workdir, store=store, create_runtime_if_none=False) as h:
        assert h.runtime is None
        out = child_asks("which file?")
    assert out["pid"] != os.getpid()
    assert (out["answer"], out["write_allowed"]) == ("from the answers file", True)
    (fn,) = by_name(h.session, "child_asks")
    assert fn.status == "completed"
    store.close()
