"""Handle usage: running total from llm nodes, delta of the current save window."""

from sessiondag import Call, ROOT
from sessiondag.store import SessionStore


def usage(h):
    return (h.usage_total.input_tokens, h.usage_total.output_tokens), \
           (h.usage_delta.input_tokens, h.usage_delta.output_tokens)


def llm(s, pred, i, o, **kw):
    return s.append(Call("llm", "m", predecessor=pred,
                         metadata={"gen_ai.usage.input_tokens": i, "gen_ai.usage.output_tokens": o}, **kw))


def test_usage_total_and_delta(tmp_path):
    store = SessionStore(tmp_path / "state")
    h = store.start_session("u", working_dir=tmp_path)
    assert usage(h) == ((0, 0), (0, 0))
    s = store.session("u")
    u = s.append(Call("user", "u", output="q", predecessor=ROOT))
    a = llm(s, u.id, 10, 2)
    s.append(Call("code", "tool", caller=a.id, metadata={"gen_ai.usage.input_tokens": 999}))  # not an llm
    assert usage(store.handle(s)) == ((10, 2), (10, 2))          # open turn: not yet saved
    s.commit_turn()
    assert usage(store.handle(s)) == ((10, 2), (10, 2))          # just saved: what the save held
    b = llm(s, a.id, 5, 1, status="running")
    s.update(b.id, status="completed", metadata={"gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3})
    assert usage(store.handle(s)) == ((17, 5), (7, 3))
    s.commit_turn()
    assert usage(store.handle(s)) == ((17, 5), (7, 3))
    assert s.commit_turn() is None                               # nothing new: no commit, same window
    assert usage(store.handle(s)) == ((17, 5), (7, 3))
    store.close()
    store = SessionStore(tmp_path / "state")                     # the marks survive a reopen
    assert usage(store.resume_session("u", working_dir=tmp_path)) == ((17, 5), (7, 3))
    s = store.session("u")
    llm(s, b.id, 1, 1)
    assert usage(store.handle(s)) == ((18, 6), (1, 1))
    store.close()
    store = SessionStore(tmp_path / "state")                     # uncommitted tail replayed from the journal
    assert usage(store.resume_session("u", working_dir=tmp_path)) == ((18, 6), (1, 1))
    store.close()


def test_usage_sees_another_processes_commit(tmp_path):
    """Two stores (as two processes would) on one session: a save by one moves the other's window."""
    one, two = SessionStore(tmp_path / "state"), SessionStore(tmp_path / "state")
    one.start_session("u", working_dir=tmp_path)
    s1, s2 = one.session("u"), two.session("u")
    u = s1.append(Call("user", "u", predecessor=ROOT))
    llm(s1, u.id, 4, 4)
    assert usage(two.handle(s2)) == ((4, 4), (4, 4))
    s1.commit_turn()
    assert usage(two.handle(s2)) == ((4, 4), (4, 4))
    assert s2.commit_turn() is None                               # s1 already saved everything
    llm(s2, s2.head_id, 1, 0)
    assert usage(one.handle(s1)) == ((5, 4), (1, 0))
    one.close()
    two.close()


def test_non_integer_usage_is_ignored(tmp_path):
    store = SessionStore(tmp_path / "state")
    store.start_session("u", working_dir=tmp_path)
    s = store.session("u")
    u = s.append(Call("user", "u", predecessor=ROOT))
    s.append(Call("llm", "m", predecessor=u.id, metadata={"gen_ai.usage.input_tokens": "12",
                                                          "gen_ai.usage.output_tokens": 2.5}))
    assert usage(store.handle(s))[0] == (0, 0)
    store.close()
