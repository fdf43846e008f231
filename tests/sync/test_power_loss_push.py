"""A power loss after a push never rolls back a commit the remote already has: a push first makes
what it sends durable (the store's sync point), so after the loss the session reopens at or after
the pushed commit and the next push fast-forwards the remote.

A power loss cannot be caused from a test (the page cache outlives every process): as in
tests/store/test_snapshot_sync.py, what it may do to the files written without fsync is done to
them by hand (the packs written since the unsynced marker zeroed), and the marker is rewritten as
the previous boot would have left it.
"""

from __future__ import annotations

import os

import orjson
import pytest

from sessiondag.core.settings import Settings
from sessiondag.store import packs
from sessiondag.store.snapshot_sync import MARKER
from sessiondag.sync import push, remotes

from . import git_servers
from .conftest import add_turn, fsck, store_at


def _lose_power(git_dir: str) -> list[str]:
    """What a power loss may leave: the marker from another boot, every pack written since it
    zeroed (their pages never reached the disk). Returns the packs zeroed."""
    marker = os.path.join(git_dir, MARKER)
    st = os.stat(marker)
    with open(marker, "rb") as f:
        body = orjson.loads(f.read())
    with open(marker, "wb") as f:
        f.write(orjson.dumps({**body, "boot": "a-boot-before-the-power-loss"}))
    os.utime(marker, ns=(st.st_atime_ns, st.st_mtime_ns))
    pack_dir = os.path.join(git_dir, "objects", "pack")
    zeroed = []
    for name in os.listdir(pack_dir):
        path = os.path.join(pack_dir, name)
        if name.endswith((".pack", ".idx")) and os.stat(path).st_mtime >= st.st_mtime:
            with open(path, "r+b") as f:
                f.write(bytes(os.path.getsize(path)))
            zeroed.append(name)
    return zeroed


def _one_session(tmp_path):
    """A bare remote and a state dir holding one open session "s": (remote, store, session)."""
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    store = store_at(tmp_path / "state")
    store.open_session("s", working_dir=wd)
    return repo, store, store.session("s")


@pytest.mark.process
@pytest.mark.parametrize("after", ["nothing", "one-more-turn"])
def test_a_power_loss_after_a_push_keeps_what_was_pushed(tmp_path, after):
    repo, store, s = _one_session(tmp_path)
    ids = []
    for i in range(4):
        u, llm, _ = add_turn(s, f"turn {i}")
        ids += [u.id, llm.id]
    git_dir = s.git.git_dir
    assert os.path.exists(os.path.join(git_dir, MARKER)), "the commits were not left unsynced"
    r = remotes.resolve(store.state_dir, repo)
    pushed = push.push(store, r, "s", Settings())
    assert pushed["status"] == "pushed"
    if after == "one-more-turn":   # committed after the push, unsynced, not pushed
        u, llm, _ = add_turn(s, "after the push")
        ids += [u.id, llm.id]
        assert os.path.exists(os.path.join(git_dir, MARKER))
    branch = [c.to_dict() for c in s.get_branch()]
    zeroed = _lose_power(git_dir) if os.path.exists(os.path.join(git_dir, MARKER)) else []
    if after == "one-more-turn":
        assert zeroed, "the turn after the push left no pack to damage"
    store.close()

    again = store_at(tmp_path / "state")
    t = again.session("s")
    assert [c.to_dict() for c in t.get_branch()] == branch            # no node lost
    assert all(i in t.graph.nodes for i in ids)
    assert not os.path.exists(os.path.join(t.git.git_dir, MARKER))    # recovered and synced
    add_turn(t, "after the power loss")
    got = push.push(again, remotes.resolve(again.state_dir, repo), "s", Settings())
    assert got["status"] == "pushed" and got["old"] == pushed["commit"]   # a fast-forward
    fsck(t.git.git_dir)
    fsck(repo)
    again.close()


def _packs(git_dir: str) -> int:
    return sum(1 for n in os.listdir(os.path.join(git_dir, "objects", "pack")) if n.endswith(".pack"))


def test_pushes_after_every_turn_keep_the_pack_count_bounded(tmp_path, monkeypatch):
    """A push's sync point makes the packs durable as they are and leaves their merge to the next
    sync point — until the pack dir holds more than DEFER_MERGE_PACKS packs: then it merges as a
    rotation's would (a full size tier), so the count stays under the bound plus one tier."""
    repo, store, s = _one_session(tmp_path)
    r = remotes.resolve(store.state_dir, repo)
    git_dir = s.git.git_dir

    def turn_and_push(i: int) -> tuple[int, int]:
        add_turn(s, f"turn {i}")
        before = _packs(git_dir)
        push.push(store, r, "s", Settings())
        assert not os.path.exists(os.path.join(git_dir, MARKER))      # durable: the sync point ran
        return before, _packs(git_dir)

    monkeypatch.setattr(push, "DEFER_MERGE_PACKS", 1000)
    for i in range(packs.TIER0_WIDTH + 2):   # a full first tier: a rotation's sync point would merge it
        before, after = turn_and_push(i)
        assert after >= before, "a push under the bound merged"
    assert after > packs.TIER0_WIDTH
    monkeypatch.setattr(push, "DEFER_MERGE_PACKS", 5)
    bound, counts = 5 + packs.TIER0_WIDTH, []
    for i in range(bound + 2):
        before, after = turn_and_push(100 + i)
        counts.append(after)
        assert after <= bound, counts
    assert min(counts) < packs.TIER0_WIDTH, f"past the bound no push merged: {counts}"
    store.close()
    fsck(git_dir)
    fsck(repo)
