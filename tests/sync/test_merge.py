"""Divergent continuations on two state dirs, pulled both ways: a union of nodes, seqs unique and
increasing, old manifests replayed byte for byte, HEAD where the user is, a merge commit with both
parents; a conflicting node id and a non-fast-forward push refused, nothing changed."""

import os
import subprocess

import orjson
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from sessiondag import ROOT, Call
from sessiondag.context.messages import render_messages
from sessiondag.core.settings import Settings
from sessiondag.sync import pull, push, remotes
from sessiondag.sync.errors import NonFastForwardError, SyncConflictError
from sessiondag.sync.merge import ORIGIN_KEY

from . import git_servers
from .conftest import add_turn, disk_state, fsck, make_session, remote_refs, shape, store_at


def shared_session(tmp, turns):
    """Session `s` made in state dir a, pushed to a bare repo, cloned into state dir b."""
    repo = git_servers.bare_repo(str(tmp / "sessions.git"))
    wd = str(tmp / "wd")
    os.makedirs(wd)
    a, b = store_at(tmp / "a"), store_at(tmp / "b")
    make_session(a, "s", wd, turns=turns)
    r = remotes.resolve(a.state_dir, repo)
    push.push(a, r, "s", Settings())
    pull.clone(b, r, "s", working_dir=wd)
    return a, b, r, repo


@pytest.fixture
def two(tmp_path):
    a, b, r, repo = shared_session(tmp_path, 2)
    yield a, b, r, repo
    a.close()
    b.close()


def _renders(s):
    """Every llm node's render (messages + manifest), replayable later."""
    out = {}
    for b in s.list_branches():
        msgs, manifest = render_messages(s, b.head_id)
        out[b.head_id] = (orjson.dumps(msgs), manifest)
    return out


def _replays_same(s, before):
    for head, (msgs, manifest) in before.items():
        again, _ = render_messages(s, head, manifest=manifest)
        assert orjson.dumps(again) == msgs, head


def _seqs_ok(s):
    seqs = sorted(c.seq for c in s.graph.nodes.values())
    assert len(seqs) == len(set(seqs))
    for c in s.graph.nodes.values():  # a node comes after its predecessor and its caller
        for other in (c.predecessor, c.caller if c.id != ROOT else None):
            if other not in (None, ROOT):
                assert s.graph.nodes[other].seq < c.seq


def _parents(git_dir, commit):
    out = subprocess.run(["git", "-C", git_dir, "log", "-1", "--format=%P", commit], capture_output=True,
                         text=True, check=True).stdout.split()
    return out


def test_divergent_continuations_merge_both_ways(two):
    a, b, r, repo = two
    sa, sb = a.session("s"), b.session("s")
    add_turn(sa, "only on a")
    add_turn(sb, "only on b, first")
    add_turn(sb, "only on b, second")
    ids_a, ids_b = set(sa.graph.nodes), set(sb.graph.nodes)
    before_a, before_b = _renders(sa), _renders(sb)
    head_a, head_b = sa.head_id, sb.head_id
    push.push(b, r, "s", Settings())

    refs = remote_refs(repo)
    state = disk_state(sa.path)
    with pytest.raises(NonFastForwardError):
        push.push(a, r, "s", Settings())
    assert remote_refs(repo) == refs and disk_state(sa.path) == state

    got = pull.pull(a, r, "s")
    assert got["status"] == "merged" and got["added"] == 4
    assert set(sa.graph.nodes) == ids_a | ids_b
    assert sa.head_id == head_a                                  # HEAD stays where the user is
    _seqs_ok(sa)
    _replays_same(sa, before_a)
    for nid in ids_b - ids_a:                                    # renumbered, original kept
        c = sa.graph.nodes[nid]
        assert c.metadata[ORIGIN_KEY]["seq"] == sb.graph.nodes[nid].seq != c.seq
        assert c.seq > max(sa.graph.nodes[i].seq for i in ids_a)
    assert head_b in {x.head_id for x in sa.list_branches()}    # b's line is its own branch here
    git_a = os.path.join(sa.path, "git")
    assert len(_parents(git_a, "refs/heads/main")) == 2

    push.push(a, r, "s", Settings())
    got = pull.pull(b, r, "s")
    assert got["added"] == 2
    assert sb.head_id == head_b
    _seqs_ok(sb)
    _replays_same(sb, before_b)
    assert shape(a, "s") == shape(b, "s")

    push.push(b, r, "s", Settings())
    assert pull.pull(a, r, "s")["added"] == 0
    assert shape(a, "s") == shape(b, "s")
    for d in (git_a, os.path.join(sb.path, "git"), repo):
        fsck(d)


def test_conflicting_node_id_is_typed_and_changes_nothing(two):
    a, b, r, repo = two
    sa, sb = a.session("s"), b.session("s")
    for s, text in ((sa, "said on a"), (sb, "said on b")):
        s.append(Call("user", "alice", output=text, predecessor=s.head_id, id="n-same-id"))
        s.commit_turn()
    push.push(b, r, "s", Settings())
    state = disk_state(sa.path)
    with pytest.raises(SyncConflictError) as e:
        pull.pull(a, r, "s")
    assert e.value.code == "sync_conflict" and e.value.data()["node_id"] == "n-same-id"
    assert disk_state(sa.path) == state
    assert not os.listdir(os.path.join(a.state_dir, "sync", "tmp"))   # the quarantine went too


@hsettings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from("ab"), st.booleans()), min_size=1, max_size=6))
def test_any_interleaving_loses_no_node(tmp_path_factory, steps):
    """Whatever each side does (continue, or fork from an older turn), pulls both ways end with the
    same nodes and branches on both sides, seqs unique on each."""
    a, b, r, _ = shared_session(tmp_path_factory.mktemp("prop"), 1)
    for i, (side, fork) in enumerate(steps):
        store = a if side == "a" else b
        s = store.session("s")
        head = s.get_branch()[1].id if fork else None
        add_turn(s, f"{side} step {i}", head=head)
    made = set(a.session("s").graph.nodes) | set(b.session("s").graph.nodes)
    push.push(b, r, "s", Settings())
    pull.pull(a, r, "s")
    push.push(a, r, "s", Settings())
    pull.pull(b, r, "s")
    for store in (a, b):
        g = store.session("s").graph
        assert set(g.nodes) == made
        assert len({c.seq for c in g.nodes.values()}) == len(g.nodes)
    assert shape(a, "s") == shape(b, "s")
    a.close()
    b.close()
