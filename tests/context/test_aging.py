from sessiondag import Call
from sessiondag.context.aging import AGED_KEY, current_manifest
from sessiondag.context.messages import render_messages

from .harness import chat


def _tool_contents(msgs):
    return [m["content"] for m in msgs if m["role"] == "tool"]


def test_boundary_advances_only_at_turn_commit(session, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "2")
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", "4")
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


def test_boundary_never_moves_back(session, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "2")
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


def test_switches_read_at_call_time(session, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "0")
    chat(session, 2, result="abcdefgh")
    session.commit_turn()
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", "2")
    msgs, _ = render_messages(session)
    assert all(c.startswith("ab\n[…") for c in _tool_contents(msgs))
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING", "off")
    msgs, m = render_messages(session)
    assert m["aged_before_seq"] == 0
    assert _tool_contents(msgs) == ["abcdefgh0.0", "abcdefgh1.0"]
