import threading

from sessiondag.runtime import Runtime, run_task
from sessiondag.runtime.providers.scripted import ScriptedProvider, message_text
from sessiondag.runtime.subagents import sub_agent


class BarrierProvider(ScriptedProvider):
    """The scripted model, except that sub-agent calls hold until all three are ready to answer,
    so the three sub-agents finish at the same moment."""

    def __init__(self, script, parties):
        super().__init__(script)
        self.barrier = threading.Barrier(parties, timeout=30)

    def complete(self, messages, tools, **kw):
        if any("Instructions of `sub_agent`" in message_text(m) for m in messages):
            self.barrier.wait()
        return super().complete(messages, tools, **kw)


SCRIPT = [
    {"text": "Delegating.", "tool_calls": [
        {"id": f"s{x}", "name": "spawn_agent", "arguments": {"task": f"subtask {x}", "name": f"agent-{x}"}}
        for x in "ABC"]},
    {"match": "spawned", "text": "Three sub-agents are working."},
    {"match": "subtask A", "text": "result A"},
    {"match": "subtask B", "text": "result B"},
    {"match": "subtask C", "text": "result C"},
    {"match": "finished: completed", "text": "noted", "repeat": True},
]


def test_three_subagents_finishing_together_form_one_followup_chain(store, workdir):
    rt = Runtime(BarrierProvider(SCRIPT, 3))
    r = run_task("split the work", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    assert r.stop_reason == "end_turn" and rt.subagent_pool.pending() == 0
    spine = s.get_branch()
    shape = [(c.role, c.name, c.metadata.get("source")) for c in spine]
    assert {c.status for c in spine} == {"completed"}
    assert shape[:7] == [("code", "context/system_prompt", None), ("user", "user", None), ("llm", "scripted", None),
                         ("code", "spawn_agent", None), ("code", "spawn_agent", None), ("code", "spawn_agent", None),
                         ("llm", "scripted", None)]
    assert shape[7:] == [("user", "task", "task_followup"), ("llm", "scripted", None)] * 3
    notices = [c.output for c in spine if c.metadata.get("source") == "task_followup"]
    assert sorted(n.split("Result:\n")[1] for n in notices) == ["result A", "result B", "result C"]
    # one chain: every main-lane tip is the head; the only other tips are the three spawn branches
    tips = s.list_branches()
    assert [b.head_id for b in tips if b.spawn_root is None] == [s.head_id]
    assert len([b for b in tips if b.spawn_root is not None]) == 3
    # attach pointers land on the spawning calls
    for t in spine[3:6]:
        att = t.metadata["attached"]
        root = s.get_node(att["branch_root"])
        assert root.caller == t.id and root.metadata["spawn_branch_root"] and att["status"] == "completed"
        assert s.get_node(att["head_id"]).output == att["result"]
        fn = [c for c in s.graph.nodes.values() if c.name == "sub_agent" and c.caller == t.id][0]
        assert fn.status == "completed" and fn.output == att["result"]
    # spawn branches have clean context and the sub-agent's docstring instructs its calls
    sub_reqs = [q for q in rt.provider.requests if message_text(q["messages"][-1]).startswith("subtask")]
    assert len(sub_reqs) == 3
    doc_line = sub_agent.__doc__.split("\n")[0].strip()
    for q in sub_reqs:
        assert any(m["role"] == "system" and doc_line in m["content"] for m in q["messages"])
        assert not any("split the work" in str(m.get("content")) for m in q["messages"])
        assert q["tools"] == rt.provider.requests[0]["tools"]  # one unified tool list
        assert q["messages"][0] == rt.provider.requests[0]["messages"][0]  # and the same system prompt
    assert not s.open_turn


def test_failed_subagent_reports_error_in_followup(store, workdir):
    script = [{"text": "", "tool_calls": [{"name": "spawn_agent", "arguments": {"task": "subtask X"}}]},
              {"match": "spawned", "text": "waiting"},
              {"match": "subtask X", "text": "oops", "error": "model down"},
              {"match": "finished: error", "text": "the sub-agent failed"}]
    rt = Runtime(ScriptedProvider(script))
    r = run_task("try", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    last_user = [c for c in s.get_branch() if c.role == "user"][-1]
    assert last_user.metadata["source"] == "task_followup" and "model down" in last_user.output
    assert s.get_node(s.head_id).output == "the sub-agent failed"


def test_a_subagent_cannot_spawn_subagents(store, workdir):
    script = [{"text": "", "tool_calls": [{"name": "spawn_agent", "arguments": {"task": "subtask Y"}}]},
              {"match": "spawned", "text": "waiting"},
              {"match": "subtask Y", "text": "", "tool_calls": [{"name": "spawn_agent", "arguments": {"task": "deeper"}}]},
              {"match": "depth cap", "text": "did it myself"},
              {"match": "finished: completed", "text": "ok"}]
    rt = Runtime(ScriptedProvider(script))
    r = run_task("go", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    spawns = [c for c in s.graph.nodes.values() if c.name == "spawn_agent"]
    assert sorted(c.status for c in spawns) == ["completed", "error"]
    assert len(s.graph.spawn_heads) == 1
    assert s.get_node(s.head_id).output == "ok"
