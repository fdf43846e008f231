"""Teacher-forced replay of a branch (runtime/replay_branch.py) on a real session and workspace:
every tool call matched to its recording, a divergence at the third tool call (stops there and
says so), live tools that really run, and the original branch untouched."""

from __future__ import annotations

import pytest

from sessiondag.core.errors import ReplayRefusedError
from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime.context import SessionWriter
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.replay import Overrides
from sessiondag.runtime.replay_branch import replay_branch

FILES = ["a.txt", "b.txt", "c.txt", "d.txt"]


def reads(paths, final="read them all"):
    steps = [{"text": "", "tool_calls": [{"id": f"r{i}", "name": "read_file", "arguments": {"path": p}}]}
             for i, p in enumerate(paths)]
    return steps + [{"text": final}]


@pytest.fixture
def session(store, workdir):
    for f in FILES:
        (workdir / f).write_text(f"content of {f}")
    script = reads(FILES) + [{"match": "second", "text": "", "tool_calls": [
        {"id": "w", "name": "read_file", "arguments": {"path": "a.txt"}}]}, {"text": "second done"}]
    rt = Runtime(ScriptedProvider(script))
    r1 = run_task("read the files", working_dir=workdir, store=store, runtime=rt)
    run_task("second turn", session_id=r1.session_id, store=store, runtime=rt)
    return store.session(r1.session_id)


def _shape(s, head):
    return [(c.role, c.name, c.input if c.role == "code" else None, c.output if c.role == "code" else None)
            for c in s.get_branch(head)]


def test_all_tools_match_their_recordings(store, session, workdir):
    s = session
    (workdir / "a.txt").write_text("changed since: a replay that read it would see this")
    head = s.head_id
    before = _shape(s, head)
    first_user = [c for c in s.get_branch() if c.role == "user"][0]
    prov = ScriptedProvider(reads(FILES, "same again") + [
        {"text": "", "tool_calls": [{"id": "w", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "second again"}])
    out = replay_branch(SessionWriter(store, s), Runtime(prov),
                        first_user.id, ov=Overrides(system="You are a careful reader."), name="careful")
    assert out["stopped"] is None, out["stopped"]
    assert out["matched_tools"] == 5 and out["calls"] == 7
    assert s.head_id == head and _shape(s, head) == before  # the original is untouched
    new = _shape(s, out["head_id"])
    assert [x for x in new if x[0] == "code" and x[1] == "read_file"] == \
        [x for x in before if x[0] == "code" and x[1] == "read_file"]  # the recorded results, reused
    tools = [c for c in s.get_branch(out["head_id"]) if c.name == "read_file"]
    assert all(c.metadata["recorded_from"] for c in tools)
    assert s.graph.branch_names[out["head_id"]] == "careful"
    assert all(m["messages"][0]["content"] == "You are a careful reader." for m in prov.requests)
    assert [c.output for c in s.get_branch(out["head_id"]) if c.role == "user"] == ["read the files", "second turn"]
    assert not s.open_turn


def test_a_divergence_at_the_third_tool_call_stops_there(store, session, workdir):
    s = session
    first_user = [c for c in s.get_branch() if c.role == "user"][0]
    prov = ScriptedProvider(reads(["a.txt", "b.txt", "secret.txt", "d.txt"]))
    out = replay_branch(SessionWriter(store, s), Runtime(prov), first_user.id)
    st = out["stopped"]
    assert st["tool_call_number"] == 3 and st["tool"] == "read_file" and st["arguments"] == {"path": "secret.txt"}
    assert st["turn"] == 1 and st["call"] == 0 and "no recorded call" in st["reason"]
    assert len(prov.requests) == 3 and out["matched_tools"] == 2
    assert out["head_id"] == st["at"]  # the new branch ends at the call that diverged
    assert not (workdir / "secret.txt").exists()


def test_live_tools_run_the_tools(store, session, workdir):
    s = session
    first_user = [c for c in s.get_branch() if c.role == "user"][0]
    (workdir / "a.txt").write_text("changed since")
    prov = ScriptedProvider(reads(["a.txt"], "done"))
    rt = Runtime(prov, permissions=allow_policy(set()))
    chain = s.get_branch()
    end_of_turn_1 = chain[[c.id for c in chain].index(first_user.id) + 1:][
        [c.role for c in chain[[c.id for c in chain].index(first_user.id) + 1:]].index("user") - 1]
    out = replay_branch(SessionWriter(store, s), rt, first_user.id, to_node=end_of_turn_1.id, mode="live_tools")
    assert out["stopped"] is None
    [t] = [c for c in s.get_branch(out["head_id"]) if c.name == "read_file"]
    assert "changed since" in str(t.output) and "recorded_from" not in t.metadata


def test_refused_off_the_branch(store, session):
    s = session
    sys_prompt = s.get_branch()[0]
    with pytest.raises(ReplayRefusedError):
        replay_branch(SessionWriter(store, s), Runtime(ScriptedProvider([])), sys_prompt.id)


def test_live_tools_first_restore_the_files(tmp_path, workdir):
    """With workspace checkpoints, a live replay from the first turn sees the files as they were
    before it (a restore with an undo point), not as later turns and others left them."""
    from sessiondag.store import SessionStore
    from sessiondag.workspace.checkpointer import install
    store = SessionStore(str(tmp_path / "ck-state"))
    install(store)
    try:
        (workdir / "a.txt").write_text("as it was\n")
        script = [{"match": "first", "text": "", "tool_calls": [
            {"id": "w", "name": "write_file", "arguments": {"path": "a.txt", "content": "turn one wrote\n"}}]},
            {"text": "ok"}]
        rt = Runtime(ScriptedProvider(script), permissions=allow_policy({"write"}))
        r = run_task("first", working_dir=workdir, store=store, runtime=rt)
        s = store.session(r.session_id)
        (workdir / "a.txt").write_text("turn one wrote\n")
        prov = ScriptedProvider(reads(["a.txt"], "read it"))
        out = replay_branch(SessionWriter(store, s), Runtime(prov, permissions=allow_policy(set())),
                            r.user_node_id, mode="live_tools")
        assert out["files"]["changes"] == [{"path": "a.txt", "change": "write"}] and out["files"]["undo"]["id"]
        [t] = [c for c in s.get_branch(out["head_id"]) if c.name == "read_file"]
        assert "as it was" in str(t.output)
        (workdir / "mine.txt").write_text("changed since the last snapshot\n")
        from sessiondag.core.errors import WorkspaceDirtyError
        before = len(s.graph.nodes)
        with pytest.raises(WorkspaceDirtyError):       # a dirty tree: refused before anything is written
            replay_branch(SessionWriter(store, s), Runtime(ScriptedProvider(reads(["a.txt"])),
                                                           permissions=allow_policy(set())),
                          r.user_node_id, mode="live_tools")
        assert len(s.graph.nodes) == before
    finally:
        store.close()


def test_edits_apply_to_every_request_of_the_replay(store, session):
    s = session
    first_user = [c for c in s.get_branch() if c.role == "user"][0]
    first_llm = [c for c in s.get_branch() if c.role == "llm"][0]
    from sessiondag.context.messages import replay_messages
    n = len(replay_messages(s, first_llm.id))
    idx = [i for i, m in enumerate(replay_messages(s, first_llm.id)) if m.get("role") == "user"][0]
    prov = ScriptedProvider(reads(FILES, "same again") + [
        {"text": "", "tool_calls": [{"id": "w", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "second again"}])
    out = replay_branch(SessionWriter(store, s), Runtime(prov), first_user.id,
                        ov=Overrides(edits=[{"message_index": idx, "content": "read them, edited"}]))
    assert out["calls"] == 7 and len(prov.requests) == 7
    assert all(r["messages"][idx]["content"] == "read them, edited" for r in prov.requests)
    nodes = len(s.graph.nodes)
    with pytest.raises(ReplayRefusedError) as e:
        replay_branch(SessionWriter(store, s), Runtime(ScriptedProvider([])), first_user.id,
                      ov=Overrides(edits=[{"message_index": n + 5, "content": "x"}]))
    assert e.value.reason == "bad_edit" and len(s.graph.nodes) == nodes     # nothing written
