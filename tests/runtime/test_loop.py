import threading

from sessiondag.core.model import ROOT
from sessiondag.runtime import Runtime, allow_policy, retry_point, run_task, run_turn, session_context
from sessiondag.runtime.providers.scripted import ScriptedProvider


def chain(session, head=None):
    return [(c.role, c.name, c.status) for c in session.get_branch(head)]


def rt_with(script, allow=()):
    return Runtime(ScriptedProvider(script), permissions=allow_policy(set(allow)))


def test_builtin_reply_turn_shape_and_commit(store, workdir):
    rt = Runtime(ScriptedProvider())
    r = run_task("say hello", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    assert r.stop_reason == "end_turn" and "say hello" in r.text
    assert chain(s) == [("code", "context/system_prompt", "completed"), ("user", "user", "completed"),
                        ("llm", "scripted", "completed")]
    sp, u, l = s.get_branch()
    assert (u.caller, u.predecessor) == (ROOT, sp.id) and (l.caller, l.predecessor) == (u.id, u.id)
    assert r.head_id == l.id == s.head_id
    assert r.usage["input_tokens"] > 0 and l.metadata["gen_ai.usage.output_tokens"] == r.usage["output_tokens"]
    assert l.metadata["gen_ai.request.model"] == "scripted"
    assert l.metadata["render_manifest"]["head_id"] == u.id
    assert not s.open_turn and s.git.head() is not None
    # a second turn continues the same session; the system prompt is not recorded twice
    r2 = run_task("again", session_id=r.session_id, working_dir=workdir, store=store, runtime=rt)
    assert r2.session_id == r.session_id
    assert [n for _, n, _ in chain(s)].count("context/system_prompt") == 1
    assert s.get_branch()[3].predecessor == l.id


def test_tool_calls_become_code_nodes_under_the_llm_node(store, workdir):
    (workdir / "notes.txt").write_text("the answer is 42\n")
    script = [
        {"text": "Reading.", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "notes.txt"}},
                                            {"id": "c2", "name": "write_file",
                                             "arguments": {"path": "out.txt", "content": "x"}}]},
        {"match": "permission", "text": "The notes say 42; I was not allowed to write."},
    ]
    rt = rt_with(script)
    r = run_task("what do the notes say?", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    assert r.stop_reason == "end_turn" and r.text.startswith("The notes say 42")
    nodes = s.get_branch()
    assert [(c.role, c.name, c.status) for c in nodes[1:]] == [
        ("user", "user", "completed"), ("llm", "scripted", "completed"), ("code", "read_file", "completed"),
        ("code", "write_file", "error"), ("llm", "scripted", "completed")]
    u, l1, t1, t2, l2 = nodes[1:]
    assert (t1.caller, t1.predecessor, t1.metadata["tool_call_id"]) == (l1.id, l1.id, "c1")
    assert (t2.caller, t2.predecessor, t2.metadata["tool_call_id"]) == (l1.id, t1.id, "c2")
    assert t1.input == {"path": "notes.txt"} and t1.output == "the answer is 42\n"
    assert t2.metadata["error"]["type"] == "PermissionDeniedError"
    assert (l2.caller, l2.predecessor) == (u.id, t2.id)
    assert not (workdir / "out.txt").exists()
    # the second model call saw both tool results as tool messages answering the assistant's tool calls
    second = rt.provider.requests[1]["messages"]
    asst = [m for m in second if m["role"] == "assistant"][-1]
    assert [tc["id"] for tc in asst["tool_calls"]] == ["c1", "c2"]
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert tool_msgs[0]["tool_call_id"] == "c1" and "42" in tool_msgs[0]["content"]
    assert "permission" in tool_msgs[1]["content"]
    assert rt.provider.requests[0]["tools"] and {t["function"]["name"] for t in rt.provider.requests[0]["tools"]} >= {
        "read_file", "list_dir", "search_text", "write_file", "edit_file", "run_command", "spawn_agent", "ask_user"}


def test_allowed_write_happens(store, workdir):
    script = [{"text": "", "tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "hi"}}]},
              {"text": "written"}]
    r = run_task("write", working_dir=workdir, store=store, runtime=rt_with(script, {"write"}))
    assert r.stop_reason == "end_turn" and (workdir / "out.txt").read_text() == "hi"


def test_mid_stream_error_is_persisted_committed_and_retry_is_a_clean_sibling(store, workdir):
    script = [{"text": "I will now fa", "error": "connection reset"},
              {"match": "do the thing", "text": "done properly"}]
    rt = rt_with(script)
    r = run_task("do the thing", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    assert r.stop_reason == "error" and r.error["type"] == "ProviderError"
    err = s.get_node(r.head_id)
    assert (err.role, err.status, err.output) == ("llm", "error", "I will now fa")
    assert err.metadata["error"]["message"] == "connection reset" and "Traceback" in err.metadata["error"]["trace"]
    assert not s.open_turn  # the error turn was committed
    u1 = s.get_node(r.user_node_id)
    r2 = run_task("do the thing", session_id=r.session_id, working_dir=workdir, store=store, runtime=rt,
                  branch_from=retry_point(s, r.head_id))
    u2 = s.get_node(r2.user_node_id)
    assert r2.stop_reason == "end_turn" and u2.predecessor == u1.predecessor and u2.id != u1.id
    retry_msgs = rt.provider.requests[-1]["messages"]
    assert all("I will now fa" not in str(m.get("content")) for m in retry_msgs)
    assert err.id in [c.id for c in s.get_branch(err.id)]  # the failed line is kept
    assert err.id not in [c.id for c in s.get_branch()]


def test_cancel_mid_stream_writes_cancelled_and_commits(store, workdir):
    rt = rt_with([{"text": "thinking…", "hang": True}])
    out = {}

    def go():
        out["r"] = run_task("long task", working_dir=workdir, store=store, runtime=rt)

    started = threading.Event()
    rt.on_event = lambda kind, data: started.set() if kind == "text_delta" else None
    t = threading.Thread(target=go)
    t.start()
    assert started.wait(10)
    rt.cancel()
    t.join(10)
    r = out["r"]
    s = store.session(r.session_id)
    assert r.stop_reason == "cancelled"
    n = s.get_node(r.head_id)
    assert (n.role, n.status, n.output) == ("llm", "cancelled", "thinking…") and "error" not in n.metadata
    assert not s.open_turn


def test_events_stream_deltas_nodes_and_tool_calls(store, workdir):
    script = [{"text": "abc" * 10, "tool_calls": [{"name": "list_dir", "arguments": {}}]}, {"text": "ok"}]
    rt = rt_with(script)
    events = []
    rt.on_event = lambda kind, data: events.append((kind, data))
    run_task("go", working_dir=workdir, store=store, runtime=rt)
    kinds = [k for k, _ in events]
    assert "".join(d["delta"] for k, d in events if k == "text_delta") == "abc" * 10 + "ok"
    assert kinds.count("tool_call") == 1 and kinds[-1] == "turn_finished"
    assert "node_appended" in kinds and "node_updated" in kinds


def test_attachments_are_stored_by_reference(store, workdir):
    import base64
    rt = rt_with([{"text": "a PNG"}])
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
    r = run_task({"text": "what is this?", "attachments": [{"data": base64.b64encode(png).decode(),
                                                             "media_type": "image/png", "name": "x.png"}]},
                 working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    u = s.get_node(r.user_node_id)
    assert u.output[0] == {"type": "text", "text": "what is this?"} and u.output[1]["type"] == "image"
    assert s.load_blob(u.output[1]["$blob"]) == png
    sent = rt.provider.requests[0]["messages"][-1]["content"]
    assert any(p.get("type") == "image_url" for p in sent)
