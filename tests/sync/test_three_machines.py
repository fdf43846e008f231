"""Three machines through one remote: A pushes a session, B and C clone it and continue it apart,
and everyone pulls everyone (in whatever order the pushes allow): every side renders the same
branches, seqs stay unique on each, `git fsck --strict` is clean on all four repositories.

The same three lines give a manifest two machines recorded alike in their own numberings: B and C
each rendered a request at the same shared node after a turn of their own, so the two manifests are
equal dicts whose cuts select different nodes. Once both lines are on A, the manifest passed as it
is has recorders that disagree (two sync origins): it is refused typed (`invalid_manifest`, naming
both) rather than rendered in one of them; replayed by node id each one rebuilds its own request.
"""

from __future__ import annotations

import os

import orjson
import pytest

from sessiondag import Call
from sessiondag.context.aging import ManifestError
from sessiondag.context.messages import render_messages, replay_messages
from sessiondag.core.settings import Settings
from sessiondag.sync import pull, push, remotes
from sessiondag.sync.errors import NonFastForwardError
from sessiondag.sync.merge import ORIGIN_KEY

from .conftest import add_turn, fsck, shape, store_at


def _sync_all(machines, sid):
    """Each machine pulls, then pushes (one refused as a non-fast-forward pulls again first); then
    each pulls what the later pushes added: nothing is left anywhere that another lacks."""
    for store, r in machines:
        pull.pull(store, r, sid)
        try:
            push.push(store, r, sid, Settings())
        except NonFastForwardError:
            pull.pull(store, r, sid)
            push.push(store, r, sid, Settings())
    for store, r in machines:
        pull.pull(store, r, sid)
    for store, r in machines:
        assert pull.pull(store, r, sid)["status"] == "up_to_date"


def _recorded_turn(s, ask_id: str, text: str) -> tuple[str, dict, bytes]:
    """A model reply to the shared question `ask_id`, rendered here, with the manifest recorded."""
    msgs, m = render_messages(s, ask_id)
    llm = s.append(Call("llm", "model-x", output=text, caller=ask_id, predecessor=ask_id,
                        metadata={"render_manifest": m}))
    s.commit_turn()
    return llm.id, m, orjson.dumps(msgs)


@pytest.mark.process
def test_three_machines_continue_apart_and_converge(tmp_path, remote_url):
    url, repo = remote_url
    a, b, c = (store_at(tmp_path / n) for n in "abc")
    ra, rb, rc = (remotes.resolve(x.state_dir, url) for x in (a, b, c))
    a.open_session("s", working_dir=None)
    sa = a.session("s")
    add_turn(sa, "shared")
    ask = sa.append(Call("user", "alice", output="the shared question", predecessor=sa.head_id))
    sa.commit_turn()
    push.push(a, ra, "s", Settings())
    for store, r in ((b, rb), (c, rc)):
        assert pull.clone(store, r, "s", working_dir=None)["status"] == "cloned"
    sb, sc = b.session("s"), c.session("s")

    base = sa.graph.nodes[ask.predecessor].id
    for s, who in ((sb, "b"), (sc, "c")):            # a turn of their own, then the shared question
        add_turn(s, f"{who} first", head=base)
        add_turn(s, f"{who} second")
    lb, mb, want_b = _recorded_turn(sb, ask.id, "b answers")
    lc, mc, want_c = _recorded_turn(sc, ask.id, "c answers")
    assert mb == mc, "the two machines recorded different manifests: the case is not set up"
    add_turn(sa, "a goes on")                       # A continues too

    push.push(b, rb, "s", Settings())
    with pytest.raises(NonFastForwardError):
        push.push(c, rc, "s", Settings())
    _sync_all([(a, ra), (b, rb), (c, rc)], "s")

    want = shape(a, "s")
    assert shape(b, "s") == want and shape(c, "s") == want
    ids = set(sa.graph.nodes)
    assert ids == set(sb.graph.nodes) == set(sc.graph.nodes)
    for s in (sa, sb, sc):
        seqs = [n.seq for n in s.graph.nodes.values()]
        assert len(seqs) == len(set(seqs))
        assert orjson.dumps(replay_messages(s, lb)) == want_b      # each by its node id: its own bytes
        assert orjson.dumps(replay_messages(s, lc)) == want_c
    assert ORIGIN_KEY in sa.graph.nodes[lb].metadata and ORIGIN_KEY in sa.graph.nodes[lc].metadata
    with pytest.raises(ManifestError) as e:                          # passed as it is: which numbering?
        render_messages(sa, manifest=mb)
    assert e.value.code == "invalid_manifest" and lb in str(e.value) and lc in str(e.value)
    for s in (sa, sb, sc):
        fsck(s.git.git_dir)
    fsck(repo)
    for x in (a, b, c):
        x.close()
