"""Journal records read back from disk are checked like a snapshot load (issue 19, items 8 and 9):
the first bad record stops the replay with its offset, what is before it stays readable, no write
is taken after it, and a commit never writes what the loader would refuse."""

import os

import pytest

from sessiondag.core.model import Call
from sessiondag.store import SessionStore
from sessiondag.store.journal import CorruptJournalError

from journal_plant import last_node, node, plant


def _session(state_dir, workdir):
    store = SessionStore(state_dir)
    s = store.session(store.open_session("r1", working_dir=workdir).id)
    u = s.append(Call("user", "me", output="kept", predecessor="ROOT"))
    s.commit_turn()
    llm = s.append(Call("llm", "m", output="kept too", caller=u.id, predecessor=u.id))
    return store, s, [u.id, llm.id]


def _bad_lines(t, ids):
    seq = t["seq"]
    return {
        "not JSON": [b"{torn", node(t, id="n2", seq=seq + 1)],
        "not an object": [b"[1, 2]"],
        "unknown kind": [b'{"z": 1}'],
        "repeated seq": [node(t, id="n1", seq=seq, caller=ids[0], predecessor=ids[0])],
        "repeated id": [node(t, seq=seq + 1)],
        "caller cycle": [node(t, id="x1", seq=seq + 1, role="code", caller="x2", predecessor=None),
                         node(t, id="x2", seq=seq + 2, role="code", caller="x1", predecessor=None)],
        "predecessor not yet": [node(t, id="p1", seq=seq + 1, predecessor="p2")],
        "seq not a number": [node(t, id="s1", seq="7")],
        "update of nobody": [b'{"u": "ghost", "f": {"status": "error"}}'],
        "checkout of nobody": [b'{"c": "ghost"}'],
        "update not a dict": [b'{"u": "%s", "f": [1]}' % ids[1].encode()],
    }


@pytest.mark.parametrize("kind", list(_bad_lines({"seq": 0}, ["a", "b"])))
def test_the_first_bad_record_stops_the_replay_and_every_write(state_dir, workdir, kind):
    store, s, ids = _session(state_dir, workdir)
    t = last_node(os.path.join(s.path, "journal.log"))
    good = node(t, id="g1", seq=t["seq"] + 1, role="code", name="f", caller=ids[1], predecessor=None)
    plant(s.path, [good])
    ids_all = [c.id for c in s.graph.nodes.values()]
    assert "g1" in ids_all  # a good record another process wrote is caught up with
    at = plant(s.path, _bad_lines({**t, "seq": t["seq"] + 1}, ids)[kind])
    for reader in (s, SessionStore(state_dir).session("r1")):  # the live session, and a fresh open
        assert [c.id for c in reader.get_branch()] == ids and "g1" in reader.graph.nodes
        assert reader.damage is not None and reader.damage.offset == at
        with pytest.raises(CorruptJournalError, match=f"at byte {at}"):
            reader.append(Call("user", "me", output="after", predecessor=ids[-1]))
        with pytest.raises(CorruptJournalError):
            reader.commit_turn()
        with pytest.raises(CorruptJournalError):
            reader.set_meta("k", 1)
    store.close()


def test_a_commit_never_writes_what_the_loader_would_refuse(state_dir, workdir):
    store, s, ids = _session(state_dir, workdir)
    head = s.git.head()
    a = s.append(Call("code", "f", output=1, caller=ids[1]))
    b = s.append(Call("code", "g", output=2, caller=ids[1]))
    s.graph.nodes[a.id].caller = b.id  # damage in memory (no write path lets it in)
    with pytest.raises(CorruptJournalError, match="refusing to commit"):
        s.commit_turn()
    assert s.git.head() == head
    store.close()
    again = SessionStore(state_dir)
    assert [c.id for c in again.session("r1").get_branch()] == ids  # the journal still reads
    again.close()
