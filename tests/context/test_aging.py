import os

from sessiondag import Call
from sessiondag.context.aging import AGED_KEY, current_manifest
from sessiondag.context.messages import render_messages
from sessiondag.store import SessionStore

from .harness import aged_to_the_last_turn, chat, commit_chat_turns


def _tool_contents(msgs):
    return [m["content"] for m in msgs if m["role"] == "tool"]


def test_boundary_advances_only_at_turn_commit(session_with):
    session = session_with({"SESSIONDAG_TOOL_AGING_TAIL_TURNS": 2, "SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS": 4})
    for _ in range(2):
        chat(session, 1, result="0123456789")
        session.commit_turn()
    assert current_manifest(session)["aged_before_seq"] == 0  # only two turns so far
    chat(session, 1, result="0123456789")  # turn 3, not committed yet: mid-turn, nothing moves
    assert current_manifest(session)["aged_before_seq"] == 0
    msgs, _ = render_messages(session)
    assert all("aged" not in c for c in _tool_contents(msgs))
    session.commit_turn()
    users = [c for c in session.get_branch() if c.role == "user"]
    assert current_manifest(session)["aged_before_seq"] == users[1].seq
    msgs, m = render_messages(session)
    tools = _tool_contents(msgs)
    assert tools[0] == "0123\n[… 9 more characters aged out of context]"
    assert tools[1:] == ["01234567890.0", "01234567890.0"]
    assert m["aged_before_seq"] == users[1].seq


def test_boundary_never_moves_back(session_with):
    session = session_with({"SESSIONDAG_TOOL_AGING_TAIL_TURNS": 2})
    ends = []
    for _ in range(4):
        ends += chat(session, 1)
        session.commit_turn()
    high = session.graph.extra[AGED_KEY]
    session.checkout(ends[0])  # a shorter chain: its own boundary would be lower
    session.append(Call("user", "alice", output="again", predecessor=ends[0]))
    session.commit_turn()
    users = [c for c in session.get_branch() if c.role == "user"]
    assert len(users) == 2 and users[0].seq < high  # this chain alone would put the boundary at users[0]
    assert session.graph.extra[AGED_KEY] == high


def test_the_switches_are_those_of_the_store_that_renders(session_with, monkeypatch):
    session = session_with({"SESSIONDAG_TOOL_AGING_TAIL_TURNS": 0, "SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS": 2})
    chat(session, 2, result="abcdefgh")
    session.commit_turn()
    msgs, _ = render_messages(session)
    assert all(c.startswith("ab\n[…") for c in _tool_contents(msgs))
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING", "off")   # too late for this store: its settings are frozen
    assert all(c.startswith("ab\n[…") for c in _tool_contents(render_messages(session)[0]))
    other = SessionStore(os.path.dirname(os.path.dirname(session.path)))   # a store built now: aging off
    msgs, m = render_messages(other.session(session.id))
    assert m["aged_before_seq"] == 0
    assert _tool_contents(msgs) == ["abcdefgh0.0", "abcdefgh1.0"]
    other.close()


def test_a_bare_store_records_no_boundary_until_a_hooked_store_commits(tmp_path, tail_of_one_turn):
    """The store runs no aging of its own (it imports nothing above it): the boundary moves only at
    a commit made through a store with `advance_aging` installed, and then catches up at once."""
    from sessiondag.context.aging import advance_aging
    from sessiondag.store import SessionStore

    bare = SessionStore(tmp_path / "state")
    s = bare.session(bare.open_session(None, working_dir=None).id)
    commit_chat_turns(s, 3)
    assert AGED_KEY not in s.graph.extra
    bare.close()
    hooked = SessionStore(tmp_path / "state")
    hooked.add_commit_hook(advance_aging)
    hooked.add_commit_hook(advance_aging)          # installing twice is a no-op
    assert hooked.commit_hooks == [advance_aging]
    s = hooked.session(s.id)
    commit_chat_turns(s, 1)
    assert aged_to_the_last_turn(s)   # at once: every turn before the last one aged
    hooked.close()


def test_session_context_installs_the_hook_on_the_store_it_is_given(tmp_path, tail_of_one_turn):
    from sessiondag.context.aging import advance_aging
    from sessiondag.runtime.context import session_context
    from sessiondag.store import SessionStore

    store = SessionStore(tmp_path / "state")
    assert store.commit_hooks == []
    with session_context(store=store, working_dir=tmp_path, create_runtime_if_none=False) as h:
        for _ in range(2):
            chat(h.session, 1)
            h.writer.commit_turn()
    assert store.commit_hooks == [advance_aging]
    assert aged_to_the_last_turn(h.session)
    store.close()
