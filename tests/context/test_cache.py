"""The render cache: reuse after one more turn, invalidation by writes, concurrent renders."""

import threading

import orjson

from sessiondag import Call
from sessiondag.context import render as render_mod
from sessiondag.context.messages import render_dag_messages, render_messages
from sessiondag.context.render import render_context

from .harness import chat


def _plain(s, fmt, head=None):
    render_mod.USE_PREFIX_MEMO = False
    try:
        return render_dag_messages(render_context(s, head), fmt, session=s)
    finally:
        render_mod.USE_PREFIX_MEMO = True


def test_one_more_turn_reuses_the_rendered_history(session):
    chat(session, 30, tools_per_turn=2)
    for fmt in ("openai", "anthropic"):
        before, _ = render_messages(session, format=fmt)
        chat(session, 1)
        after, _ = render_messages(session, format=fmt)
        # the history's messages are the very same objects: nothing before the new turn re-rendered
        assert len(after) > len(before)
        same = sum(1 for a, b in zip(before, after) if a is b)
        assert same >= len(before) - 1
        assert after == _plain(session, fmt)


def test_a_write_under_an_old_anchor_is_seen(session):
    ends = chat(session, 10)
    render_messages(session)
    old_llm = session.get_node(ends[2])
    first_tool = [c for c in session.get_branch() if c.role == "code"][2]
    session.update(first_tool.id, metadata={"expose": "none"})  # hides it (and its tool call)
    msgs, _ = render_messages(session)
    assert msgs == _plain(session, "openai")
    assert first_tool.metadata["tool_call_id"] not in orjson.dumps(msgs).decode()
    # a new callee under an old turn's user node shows up too
    session.append(Call("code", "late", input=1, output="late-result", caller=old_llm.caller))
    msgs, _ = render_messages(session)
    assert "late-result" in orjson.dumps(msgs).decode() and msgs == _plain(session, "openai")


def test_concurrent_renders_of_two_branches(session):
    """Renders from several threads (the store's writes are single-threaded per process: its journal
    lock is per process, so this test does not write concurrently)."""
    a_ends = chat(session, 20)
    session.checkout(a_ends[9])
    b_ends = chat(session, 15)
    heads = [a_ends[-1], b_ends[-1], a_ends[5]]
    expected = {(h, f): _plain(session, f, h) for h in heads for f in ("openai", "anthropic")}
    errors, barrier = [], threading.Barrier(3)

    def reader(k):
        try:
            barrier.wait()
            for i in range(60):
                h = heads[(i + k) % 3]
                f = ("openai", "anthropic")[(i // 3 + k) % 2]
                msgs = render_dag_messages(render_context(session, h), f, session=session)
                if msgs != expected[(h, f)]:
                    errors.append((h, f))
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_a_late_call_from_an_earlier_turn_keeps_seq_order_and_the_memo(session):
    ends = chat(session, 3)
    turn = session.get_node(ends[1]).caller  # the second turn's user node
    render_messages(session)
    session.append(Call("code", "late", input={"k": 1}, output="late result", caller=turn))
    for fmt in ("openai", "anthropic"):
        msgs, _ = render_messages(session, format=fmt)
        assert msgs == _plain(session, fmt)
    rc = render_context(session)
    assert rc._memo is not None  # still incremental
    assert [c.seq for c in rc.nodes] == sorted(c.seq for c in rc.nodes)
    assert rc.nodes[-1].name == "late"
    chat(session, 2)
    for fmt in ("openai", "anthropic"):
        msgs, _ = render_messages(session, format=fmt)
        assert msgs == _plain(session, fmt)
    session.checkout(ends[0])  # back before the late call's turn, then forward again
    render_messages(session)
    session.checkout(ends[-1])
    assert render_messages(session)[0] == _plain(session, "openai")


def test_in_frame_renders_reuse_the_history(session):
    chat(session, 20)
    u = session.append(Call("user", "alice", output="go", predecessor=session.head_id))
    l1 = session.append(Call("llm", "model-x", output="calling", caller=u.id, predecessor=u.id))
    f = session.append(Call("code", "agent", input={"goal": 1}, caller=l1.id, predecessor=l1.id,
                            status="running", metadata={"tool_call_id": "cf"}))
    for k in range(3):
        session.append(Call("llm", "model-x", input=f"step {k}", output=f"did {k}", caller=f.id))
        for fmt in ("openai", "anthropic"):
            rc = render_context(session, frame=f.id)
            assert rc._memo is not None
            msgs = render_dag_messages(rc, fmt, session=session)
            render_mod.USE_PREFIX_MEMO = False
            try:
                plain = render_dag_messages(render_context(session, frame=f.id), fmt, session=session)
            finally:
                render_mod.USE_PREFIX_MEMO = True
            assert msgs == plain
            assert msgs[-1]["content"] in (f"did {k}", [{"type": "text", "text": f"did {k}"}])
