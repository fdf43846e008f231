"""The typed change events a Session publishes to its listeners (store/events.py): one per change, in
order, for this process's writes and (marked `foreign`) for what it reads from disk; `Reloaded` when
the graph is rebuilt; `Deleted` when this process resets the session. A listener that folds the
events into its own mirror agrees with the session's graph whatever two processes do (hypothesis)."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiondag import Call, ROOT
from sessiondag.core.settings import Settings
from sessiondag.store import SessionStore
from sessiondag.store.events import (BranchNamed, BranchSpawned, Deleted, HeadMoved, MetaChanged, NodeAppended,
                                     NodeUpdated, Reloaded, TurnCommitted)


def _listen(s):
    seen = []
    s.add_listener(lambda sess, events: seen.append(list(events)))
    return seen


@pytest.fixture
def pair(tmp_path):
    """Two stores on one state dir: `mine` (listened to) and `other` (another process's view)."""
    a, b = SessionStore(tmp_path / "state"), SessionStore(tmp_path / "state")
    a.start_session("ev", working_dir=tmp_path)
    yield a.session("ev"), b.session("ev")
    a.close()
    b.close()


def test_every_local_write_is_one_typed_event(pair):
    s, _ = pair
    seen = _listen(s)
    u = s.append(Call("user", "u", output="q", predecessor=ROOT))
    batch = s.append_many([Call("llm", "m", output="a", caller=u.id, predecessor=u.id),
                           Call("code", "t", caller=u.id)])
    s.update(batch[1].id, output="done", status="completed")
    s.checkout(u.id)
    s.name_branch(u.id, "main")
    s.set_meta("k", 1)
    root = s.spawn_branch(batch[0].id, source="task", name="sub", content="go")
    sha = s.commit_turn()
    # the session's first write records its write policy first (store/write_policy.py): its own event
    assert seen.pop(0) == [MetaChanged("write_policy", s.graph.extra["write_policy"])]
    assert seen[0] == [NodeAppended(s.get_node(u.id).to_dict())]
    assert [type(e) for e in seen[1]] == [NodeAppended, NodeAppended]            # one batch, one call
    assert [e.node_id for e in seen[1]] == [c.id for c in batch]
    assert seen[2] == [NodeUpdated(batch[1].id, {"output": "done", "status": "completed"})]
    assert seen[3:6] == [[HeadMoved(u.id)], [BranchNamed(u.id, "main")], [MetaChanged("k", 1)]]
    # a named spawn is one journal record: its append and its name come in one call
    assert [[type(e) for e in b] for b in seen[6:8]] == [[NodeAppended, BranchNamed], [BranchSpawned]]
    assert seen[6][1] == BranchNamed(root, "sub")
    assert seen[7] == [BranchSpawned(root, batch[0].id, "task", "sub")]
    assert seen[-1] == [TurnCommitted(sha, s.turn)]
    assert not any(e.foreign for b in seen for e in b if hasattr(e, "foreign"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        seen[0][0].foreign = True


def test_other_processes_writes_arrive_as_foreign_events(pair):
    s, other = pair
    u = s.append(Call("user", "u", predecessor=ROOT))
    seen = _listen(s)
    other.append(Call("llm", "m", predecessor=u.id))
    other.set_meta("x", None)
    assert s.refresh() is False          # caught up, same graph
    assert [(type(e), e.foreign) for e in seen[0]] == [(NodeAppended, True), (MetaChanged, True)]
    assert s.refresh() is False and len(seen) == 1  # nothing new: nobody is called


def test_a_reload_is_announced_before_the_replayed_records(pair, tmp_path):
    s, _ = pair
    u = s.append(Call("user", "u", predecessor=ROOT))
    s.commit_turn()
    rotating = SessionStore(tmp_path / "state", settings=Settings(journal_rotate_bytes=1))  # rotates at every commit
    other = rotating.session("ev")
    for i in range(2):  # two rotations elsewhere: more than a catch-up can follow
        other.append(Call("code", f"c{i}", caller=u.id))
        other.commit_turn()
    last = other.append(Call("code", "late", caller=u.id))
    seen = _listen(s)
    before = s.loaded_graph
    assert s.refresh() is True and s.loaded_graph is not before
    # what the old journal still held is read first; then the rebuild, then what the snapshot lacks
    *read, reload = seen
    assert all(isinstance(e, NodeAppended) and e.foreign for b in read for e in b)
    assert isinstance(reload[0], Reloaded) and not any(isinstance(e, Reloaded) for b in read for e in b)
    assert [e.node_id for e in reload[1:]] == [last.id] and all(e.foreign for e in reload[1:])
    rotating.close()


def test_reset_tells_the_listeners_and_removed_listeners_hear_nothing(tmp_path):
    store = SessionStore(tmp_path / "state")
    store.start_session("gone", working_dir=tmp_path)
    s = store.session("gone")
    seen, quiet = _listen(s), []

    def fn(sess, events):
        quiet.append(events)
    s.add_listener(fn)
    assert s.remove_listener(fn) is True and s.remove_listener(fn) is False
    assert store.reset_session("gone") is True
    assert seen == [[Deleted()]] and quiet == []
    store.close()


class Mirror:
    """What a listener can know from the events alone: nodes with their metadata, and the session
    meta (re-seeded from the graph on Reloaded, which already holds the records replayed after it)."""

    def __init__(self, s):
        self.seed(s.graph)
        s.add_listener(self.on_events)

    def seed(self, g):
        self.nodes = {nid: dict(c.metadata) for nid, c in g.nodes.items()}
        self.meta = dict(g.extra)

    def on_events(self, sess, events):
        for e in events:
            if isinstance(e, Reloaded):
                self.seed(sess.loaded_graph)
            elif isinstance(e, NodeAppended):
                self.nodes.setdefault(e.node_id, dict(e.node.get("metadata") or {}))
            elif isinstance(e, NodeUpdated):
                self.nodes[e.node_id].update(e.fields.get("metadata") or {})
            elif isinstance(e, MetaChanged):
                if e.value is None:
                    self.meta.pop(e.key, None)
                else:
                    self.meta[e.key] = e.value


OPS = st.lists(st.tuples(st.booleans(), st.sampled_from(["append", "update", "checkout", "meta", "commit"]),
                         st.integers(0, 50)), min_size=1, max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS, rotate=st.sampled_from(["1", "100000000"]))
def test_a_mirror_fed_by_events_agrees_with_the_graph(tmp_path_factory, monkeypatch, ops, rotate):
    monkeypatch.setenv("SESSIONDAG_JOURNAL_ROTATE_BYTES", rotate)
    root = tmp_path_factory.mktemp("mirror")
    a, b = SessionStore(root / "state"), SessionStore(root / "state")
    try:
        a.start_session("m", working_dir=root)
        mine, theirs = a.session("m"), b.session("m")
        mirror = Mirror(mine)
        for by_me, op, n in ops:
            s = mine if by_me else theirs
            g = s.graph
            ids = sorted(g.nodes)
            if op == "append":
                s.append(Call("user", f"u{n}", predecessor=g.head_id, metadata={"n": n}))
            elif op == "update" and len(ids) > 1:
                nid = ids[n % len(ids)]
                if nid != ROOT:
                    s.update(nid, metadata={"n": -n})
            elif op == "checkout":
                s.checkout(ids[n % len(ids)])
            elif op == "meta":
                s.set_meta(f"k{n % 3}", None if n % 4 == 0 else n)
            elif op == "commit":
                s.commit_turn()
        g = mine.graph  # the last catch-up publishes too
        assert mirror.nodes == {nid: dict(c.metadata) for nid, c in g.nodes.items()}
        assert mirror.meta == dict(g.extra)
    finally:
        a.close()
        b.close()
