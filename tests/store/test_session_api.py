"""Session API details: batch appends, compare-and-set, in-process listeners, meta, recovery of a
body whose write was killed."""

import os

import pytest

from sessiondag import Call, ROOT
from sessiondag.core.errors import HeadMismatchError, InvalidNodeError, PredecessorMissingError
from sessiondag.core.settings import Settings
from sessiondag.store import SessionStore
from store_helpers import tree_digest


@pytest.fixture
def sess(tmp_path):
    store = SessionStore(tmp_path / "state")
    store.start_session("api", working_dir=tmp_path)
    yield store, store.session("api")
    store.close()


def test_append_many_is_all_or_nothing(sess, tmp_path):
    store, s = sess
    u = Call("user", "u", output="q", predecessor=ROOT)
    l = Call("llm", "m", output="a", predecessor=u.id)
    got = s.append_many([u, l])
    assert [c.seq for c in got] == [1, 2] and s.head_id == l.id
    s.commit_turn()
    before = tree_digest(s.path)
    ok = Call("user", "u2", predecessor=l.id)
    bad = Call("llm", "orphan")  # no predecessor
    with pytest.raises(PredecessorMissingError):
        s.append_many([ok, bad])
    assert tree_digest(s.path) == before
    assert ok.id not in s.graph.nodes and s.head_id == l.id and s.graph.last_seq == 2
    with pytest.raises(InvalidNodeError):
        s.append_many([Call("user", "x", predecessor=l.id), "not a call"])
    assert tree_digest(s.path) == before
    assert s.append_many([]) == []
    store.close()
    again = SessionStore(tmp_path / "state").session("api")
    assert [c.id for c in again.get_branch()] == [u.id, l.id]


def test_expected_head_compare_and_set(sess):
    store, s = sess
    u = s.append(Call("user", "u", predecessor=ROOT), expected_head=ROOT)
    with pytest.raises(HeadMismatchError) as ei:
        s.append(Call("llm", "m", predecessor=u.id), expected_head=ROOT)
    assert ei.value.data() == {"expected": ROOT, "actual": u.id}
    s.append(Call("llm", "m", predecessor=u.id), expected_head=u.id)


def test_listeners_see_own_and_foreign_records(sess, tmp_path):
    store, s = sess
    seen = []
    s.add_listener(lambda sess_, events: seen.extend(events))
    u = s.append(Call("user", "u", predecessor=ROOT))
    other = SessionStore(tmp_path / "state")
    o = other.session("api")
    o.append(Call("llm", "m", predecessor=u.id))
    o.set_meta("k", {"v": 1})
    other.close()
    # the read noticed the other store's writes (and the write policy the session's first write recorded)
    assert s.graph.extra == {"write_policy": s.settings().write_policy(), "k": {"v": 1}}
    assert [(type(e).__name__, e.foreign) for e in seen] == [
        ("MetaChanged", False), ("NodeAppended", False), ("NodeAppended", True), ("MetaChanged", True)]


def test_set_meta_and_delete(sess, tmp_path):
    store, s = sess
    s.set_meta("summary", "abc")
    s.commit_turn()
    s.set_meta("summary", None)
    assert "summary" not in s.graph.extra
    with pytest.raises(InvalidNodeError):
        s.set_meta("", 1)
    with pytest.raises(TypeError):
        s.set_meta("bad", object())   # not JSON: refused before anything is written
    store.close()
    assert "summary" not in SessionStore(tmp_path / "state").session("api").graph.extra


def test_spill_after_a_killed_body_write(tmp_path):
    """A writer killed while writing a spilled body leaves the object's lock file behind."""
    store = SessionStore(tmp_path / "state", settings=Settings(node_spill=100))
    s = store.session(store.start_session("api", working_dir=tmp_path).id)
    body = "z" * 5000
    from dulwich.objects import Blob
    sha = Blob.from_string(body.encode()).id.decode()
    fan = os.path.join(s.path, "git", "objects", sha[:2])
    os.makedirs(fan, exist_ok=True)
    with open(os.path.join(fan, sha[2:] + ".lock"), "wb") as f:
        f.write(b"partial")
    c = s.append(Call("user", "u", output=body, predecessor=ROOT))
    assert c.output["$blob"] == sha and s.full_value(c.output) == body
    store.close()


def test_other_process_follows_a_rotation_without_reloading(tmp_path, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_JOURNAL_ROTATE_BYTES", "2000")
    one, two = SessionStore(tmp_path / "state"), SessionStore(tmp_path / "state")
    one.start_session("rot", working_dir=tmp_path)
    a, b = one.session("rot"), two.session("rot")
    g = b.graph
    jid = b.journal.journal_id
    head = ROOT
    for i in range(20):
        head = a.append(Call("user" if i % 2 == 0 else "llm", "m", output="x" * 200, predecessor=head)).id
    a.commit_turn()
    assert a.journal.journal_id != jid  # rotated
    c = b.append(Call("user", "from-b", predecessor=head))  # b catches up across the rotation
    assert b.graph is g and b.journal.journal_id == a.journal.journal_id
    assert [x.id for x in a.get_branch()] == [x.id for x in b.get_branch()]
    assert b.commit_turn() is not None and a.graph.nodes[c.id].name == "from-b"
    # two rotations while b was idle: b cannot follow, it reloads, and still agrees
    for _ in range(2):
        for i in range(12):
            head = a.append(Call("user" if i % 2 == 0 else "llm", "m", output="y" * 200, predecessor=a.head_id)).id
        a.commit_turn()
    assert [x.id for x in b.get_branch()] == [x.id for x in a.get_branch()]
    one.close()
    two.close()


@pytest.mark.slow
def test_bodies_stay_readable_after_another_process_merges_packs(tmp_path, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_NODE_SPILL", "100")
    one, two = SessionStore(tmp_path / "state"), SessionStore(tmp_path / "state")
    one.start_session("packs", working_dir=tmp_path)
    a, b = one.session("packs"), two.session("packs")
    u = a.append(Call("user", "u", output="B" * 1000, predecessor=ROOT))
    a.commit_turn()
    assert b.full_value(b.get_node(u.id).output) == "B" * 1000   # b opens the packs as they are now
    for i in range(80):  # many commits and spilled bodies: loose objects packed, packs merged
        a.append(Call("llm" if i % 2 == 0 else "user", "m", output=f"{i}" * 300, predecessor=a.head_id))
        a.commit_turn()
    assert b.full_value(b.get_node(u.id).output) == "B" * 1000
    one.close()
    two.close()


@pytest.mark.slow
def test_no_file_descriptor_leaks(tmp_path):
    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    store = SessionStore(tmp_path / "state")
    store.start_session("warm", working_dir=tmp_path)
    store.close()
    before = open_fds()
    for i in range(20):
        store = SessionStore(tmp_path / "state")
        store.start_session(f"s{i}", working_dir=tmp_path)
        s = store.session(f"s{i}")
        s.append(Call("user", "u", predecessor=ROOT))
        s.commit_turn()
        store.close()
    assert open_fds() <= before + 2


def test_a_rotation_inside_a_group_commit_is_not_a_deletion(tmp_path, monkeypatch):
    """The daemon's write queue runs appends and a commit in one `batched()` block: the commit's
    rotation must not find the group's records unsynced in the old file and call that a deletion."""
    monkeypatch.setenv("SESSIONDAG_JOURNAL_ROTATE_BYTES", "2000")
    store = SessionStore(tmp_path / "state")
    store.start_session("grp", working_dir=tmp_path)
    s = store.session("grp")
    jid = s.journal.journal_id
    with s.batched():
        ids = [s.append(Call("code", f"n{i}", output="x" * 300)).id for i in range(10)]
        s.commit_turn()
        ids.append(s.append(Call("code", "after", output=1)).id)
    assert s.journal.journal_id != jid and s.on_disk()  # rotated, and still the session's journal
    store.close()
    again = SessionStore(tmp_path / "state")
    assert all(i in again.session("grp").graph.nodes for i in ids)
    again.close()
