"""What a pull tells the remote it has: its head and what it last exchanged with that remote (not
their history). With one of them on the remote, an incremental pull receives only what is new;
with neither, the remote sends the whole session and the pull is as correct as ever."""

from __future__ import annotations

import os

from sessiondag.core.settings import Settings
from sessiondag.sync import pull, push, remotes

from . import git_servers
from .conftest import add_turn, fsck, make_session, shape, store_at


def _setup(tmp_path, turns=20):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a, b = store_at(tmp_path / "a"), store_at(tmp_path / "b")
    make_session(a, "s", wd, turns=turns, tool_output="output line\n" * 40)
    r = remotes.resolve(a.state_dir, repo)
    push.push(a, r, "s", Settings())
    cloned = pull.clone(b, remotes.resolve(b.state_dir, repo), "s", working_dir=wd)
    return a, b, repo, wd, cloned


def _pack_bytes(git_dir: str) -> int:
    d = os.path.join(git_dir, "objects", "pack")
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if n.endswith(".pack"))


def test_an_incremental_pull_receives_only_the_new_turn(tmp_path):
    a, b, repo, _wd, _ = _setup(tmp_path)
    whole = _pack_bytes(os.path.join(b.session("s").path, "git"))
    add_turn(a.session("s"), "one more on a")
    push.push(a, remotes.resolve(a.state_dir, repo), "s", Settings())
    add_turn(b.session("s"), "one more on b")        # b's head: a commit the remote lacks
    got = pull.pull(b, remotes.resolve(b.state_dir, repo), "s")
    assert got["status"] == "merged" and got["added"] == 2
    assert 0 < got["bytes"] < whole / 4, (got["bytes"], whole)
    fsck(os.path.join(b.session("s").path, "git"))
    a.close()
    b.close()


def test_a_remote_that_holds_none_of_our_haves_sends_everything(tmp_path):
    a, b, repo, wd, _ = _setup(tmp_path, turns=3)
    other = git_servers.bare_repo(str(tmp_path / "other.git"))   # b never exchanged with it
    add_turn(b.session("s"), "only on b")                         # b's head: not on `other`
    add_turn(a.session("s"), "only on a")
    push.push(a, remotes.resolve(a.state_dir, other), "s", Settings())
    got = pull.pull(b, remotes.resolve(b.state_dir, other), "s")
    assert got["status"] == "merged" and got["added"] == 2
    sb = b.session("s")
    assert set(a.session("s").graph.nodes) <= set(sb.graph.nodes)
    push.push(b, remotes.resolve(b.state_dir, other), "s", Settings())
    assert pull.pull(a, remotes.resolve(a.state_dir, other), "s")["added"] == 2
    assert shape(a, "s") == shape(b, "s")
    for d in (os.path.join(sb.path, "git"), os.path.join(a.session("s").path, "git"), other):
        fsck(d)
    a.close()
    b.close()
