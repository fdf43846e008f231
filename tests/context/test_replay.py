import orjson

from sessiondag import Call
from sessiondag.context.compaction import compact
from sessiondag.context.messages import render_messages, replay_messages
from sessiondag.context.system_prompt import record_system_prompt
from sessiondag.store import SessionStore

from .harness import chat


def test_manifest_replay_is_byte_for_byte(tmp_path, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "3")
    store = SessionStore(tmp_path / "state")
    s = store.session(store.open_session(None, working_dir=None).id)
    record_system_prompt(s, "you are helpful")
    for _ in range(4):
        chat(s, 1, result="x" * 3000)
        s.commit_turn()
    msgs, manifest = render_messages(s, format="anthropic")
    before = orjson.dumps(msgs)
    # the call is made: record the llm node with its manifest
    u = s.append(Call("user", "alice", output="and now?", predecessor=s.head_id))
    msgs2, manifest2 = render_messages(s, format="anthropic")
    call = s.append(Call("llm", "model-x", output="…", caller=u.id, predecessor=u.id,
                         metadata={"render_manifest": manifest2}))
    after = orjson.dumps(msgs2)
    s.commit_turn()
    # much later: many turns, a new system prompt, a compaction, every switch flipped
    for _ in range(12):
        chat(s, 1, result="y" * 3000)
        s.commit_turn()
    record_system_prompt(s, "you are terse")
    chain = s.get_branch()
    compact(s, [c.id for c in chain[1:9]], "early turns")
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "1")
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", "10")
    monkeypatch.setenv("SESSIONDAG_EXPOSE_DEFAULT", "full")
    assert orjson.dumps(replay_messages(s, call.id, format="anthropic")) == after
    # rendering the same head with today's policy is different (so the replay above is not vacuous)
    today, _ = render_messages(s, u.id, format="anthropic")
    assert orjson.dumps(today) != after
    # an older call's manifest replays from a fresh process too
    sid = s.id
    store.close()
    store2 = SessionStore(tmp_path / "state")
    s2 = store2.session(sid)
    old, _ = render_messages(s2, manifest["head_id"], format="anthropic", manifest=manifest)
    assert orjson.dumps(old) == before
    assert orjson.dumps(replay_messages(s2, call.id, format="anthropic")) == after
    store2.close()


def test_in_frame_replay_ignores_later_progress(session):
    u = session.append(Call("user", "alice", output="go", predecessor="ROOT"))
    f = session.append(Call("code", "fn", input={"a": 1}, caller=u.id, status="running"))
    session.append(Call("llm", "model-x", input="step 1", output="did 1", caller=f.id))
    msgs, m = render_messages(session, frame=f.id)
    m1 = session.append(Call("llm", "model-x", input="step 2", output="did 2", caller=f.id,
                             metadata={"render_manifest": m}))
    session.append(Call("llm", "model-x", input="step 3", output="did 3", caller=f.id))
    session.update(f.id, output="fn-done", status="completed")
    assert replay_messages(session, m1.id) == msgs
    # a manifest carries its head and frame: passing it alone is enough
    assert render_messages(session, manifest=m)[0] == msgs
    now, _ = render_messages(session, frame=f.id)
    assert len(now) == len(msgs) + 4
