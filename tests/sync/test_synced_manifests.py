"""A replay manifest recorded on one machine replays byte for byte on the other after a pull.

Two state dirs and a real remote (a bare repository): each side makes model turns whose llm nodes
carry the render manifest of their request (as the runtime records it), with tool results old
enough to be aged; the sessions diverge, are pulled both ways, continue from each other's lines
and are pulled again. Every llm node's manifest, replayed on either side, rebuilds the very
request bytes the machine that made it rendered — although the pull renumbered it and its context.
"""

from __future__ import annotations

import os

import orjson
import pytest

from sessiondag import ROOT, Call
from sessiondag.context.aging import ManifestError, advance_aging
from sessiondag.core.errors import ReplayRefusedError
from sessiondag.context.messages import render_bytes, render_messages, replay_messages
from sessiondag.core.settings import Settings
from sessiondag.runtime.replay import replayable
from sessiondag.store import SessionStore
from sessiondag.sync import pull, push, remotes
from sessiondag.sync.merge import ORIGIN_KEY

from . import git_servers
from .conftest import fsck

SETTINGS = dict(tool_aging_tail_turns=1, tool_aging_max_result_chars=12)


def _store(path) -> SessionStore:
    store = SessionStore(str(path), settings=Settings(**SETTINGS))
    store.add_commit_hook(advance_aging)
    return store


def model_turn(s, text: str, recorded: dict[str, bytes], *, head: str | None = None) -> str:
    """user → llm (asks for a tool) → tool result → llm, each llm node with the manifest of the
    request it was rendered for; `recorded[llm id]` = those request bytes. Committed."""
    u = s.append(Call("user", "alice", output=text, predecessor=head or s.head_id))
    msgs, m = render_messages(s, u.id)
    first = s.append(Call("llm", "model-x", output=f"looking into {text!r}", caller=u.id, predecessor=u.id,
                          metadata={"render_manifest": m}))
    recorded[first.id] = orjson.dumps(msgs)
    tool = s.append(Call("code", "shell", input={"cmd": "ls"}, output=f"result of {text}: " + "x" * 60,
                         caller=first.id, predecessor=first.id, metadata={"tool_call_id": f"call-{first.id}"}))
    msgs, m = render_messages(s, tool.id)
    last = s.append(Call("llm", "model-x", output=f"done with {text!r}", caller=u.id, predecessor=tool.id,
                         metadata={"render_manifest": m}))
    recorded[last.id] = orjson.dumps(msgs)
    s.commit_turn()
    return last.id


def _replays(s, recorded: dict[str, bytes]) -> None:
    for nid, want in recorded.items():
        replayable(s, nid)                                   # not refused
        assert orjson.dumps(replay_messages(s, nid)) == want, nid
        m = s.graph.nodes[nid].metadata["render_manifest"]   # passed as it is (session/render's manifest)
        assert orjson.dumps(render_messages(s, manifest=m)[0]) == want, nid
        assert b"[" + b",".join(render_bytes(s, manifest=m)[0]) + b"]" == want, nid


@pytest.fixture
def sides(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a, b = _store(tmp_path / "a"), _store(tmp_path / "b")
    yield a, b, repo, wd
    a.close()
    b.close()


def test_each_sides_manifests_replay_on_the_other_side(sides):
    a, b, repo, wd = sides
    ra, rb = remotes.resolve(a.state_dir, repo), remotes.resolve(b.state_dir, repo)
    a.open_session("s", working_dir=wd)
    sa = a.session("s")
    made_a: dict[str, bytes] = {}
    made_b: dict[str, bytes] = {}
    for i in range(2):
        model_turn(sa, f"shared {i}", made_a)
    push.push(a, ra, "s", Settings())
    pull.clone(b, rb, "s", working_dir=wd)
    sb = b.session("s")

    for i in range(2):                                       # divergent continuations
        model_turn(sa, f"a alone {i}", made_a)
    for i in range(3):
        model_turn(sb, f"b alone {i}", made_b)
    assert sa.graph.extra["aged_before_seq"] > 0 and sb.graph.extra["aged_before_seq"] > 0

    push.push(b, rb, "s", Settings())
    assert pull.pull(a, ra, "s")["status"] == "merged"
    push.push(a, ra, "s", Settings())
    assert pull.pull(b, rb, "s")["status"] == "fast_forward"   # a's merge holds b's line
    renumbered = [n for n in made_b if ORIGIN_KEY in sa.graph.nodes[n].metadata]
    assert renumbered and all(sa.graph.nodes[n].seq != sb.graph.nodes[n].seq for n in renumbered)
    _replays(sa, made_a | made_b)
    _replays(sb, made_a | made_b)

    # each side continues the other's line: contexts that mix both machines' nodes
    tip_b = sb.head_id
    tip_a = next(x.head_id for x in sb.list_branches() if x.head_id in made_a)
    model_turn(sa, "a on b's line", made_a, head=tip_b)
    model_turn(sb, "b on a's line", made_b, head=tip_a)
    push.push(a, ra, "s", Settings())
    assert pull.pull(b, rb, "s")["status"] == "merged"
    push.push(b, rb, "s", Settings())
    assert pull.pull(a, ra, "s")["status"] in ("merged", "fast_forward")
    _replays(sa, made_a | made_b)
    _replays(sb, made_a | made_b)
    for s in (sa, sb):
        seqs = [c.seq for c in s.graph.nodes.values()]
        assert len(seqs) == len(set(seqs)) and s.graph.nodes[ROOT].seq == 0
        fsck(os.path.join(s.path, "git"))
    fsck(repo)


def test_a_synced_node_whose_snapshot_is_not_here_is_refused_typed(sides):
    a, _b, _repo, wd = sides
    a.open_session("s", working_dir=wd)
    s = a.session("s")
    model_turn(s, "one", {})
    u = s.append(Call("user", "alice", output="two", predecessor=s.head_id))
    _msgs, m = render_messages(s, u.id)
    forged = s.append(Call("llm", "model-x", output="?", caller=u.id, predecessor=u.id,
                           metadata={"render_manifest": m, ORIGIN_KEY: {"seq": 3, "remote": "x", "commit": "0" * 40}}))
    s.commit_turn()
    with pytest.raises(ReplayRefusedError) as e:
        replayable(s, forged.id)
    assert e.value.data()["reason"] == "bad_manifest"
    with pytest.raises(ManifestError):
        replay_messages(s, forged.id)
