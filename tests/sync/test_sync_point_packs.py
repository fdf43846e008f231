"""The sync point (which a push takes before its pack goes out) makes durable every pack file
written since the unsynced marker, known by the marker's record of what was there when it was
written, not by a time window: a clock stepped back (or a copied mtime) leaves a new pack looking
older than the marker, and it must be fsync'd all the same — and after a power loss, checked.
"""

from __future__ import annotations

import os

import orjson

from sessiondag.core.settings import Settings
from sessiondag.store.snapshot_sync import MARKER
from sessiondag.sync import push, remotes

from . import git_servers
from .conftest import add_turn, fsck, store_at
from .test_power_loss_push import _lose_power


def _pack_files(git_dir: str) -> dict[str, int]:
    pd = os.path.join(git_dir, "objects", "pack")
    return {n: os.stat(os.path.join(pd, n)).st_ino for n in os.listdir(pd) if n.endswith((".pack", ".idx"))}


def _step_clock_back(git_dir: str, before: set[str]) -> list[str]:
    """Every pack file written since `before` dated an hour earlier (as a clock stepped back)."""
    pd = os.path.join(git_dir, "objects", "pack")
    moved = []
    for n in _pack_files(git_dir):
        if n not in before:
            p = os.path.join(pd, n)
            st = os.stat(p)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns - 3600 * 10**9))
            moved.append(n)
    return moved


def test_a_push_fsyncs_the_new_packs_even_when_they_look_older_than_the_marker(tmp_path, monkeypatch):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    store = store_at(tmp_path / "state")
    store.open_session("s", working_dir=None)
    s = store.session("s")
    add_turn(s, "first")
    s.git.sync()                                # everything durable, no marker
    git_dir = s.git.git_dir
    durable = set(_pack_files(git_dir))
    for i in range(3):
        add_turn(s, f"turn {i}")                # unsynced packs after the marker
    assert os.path.exists(os.path.join(git_dir, MARKER))
    new = _step_clock_back(git_dir, durable)
    assert new, "the turns wrote no pack"
    want = {ino for n, ino in _pack_files(git_dir).items() if n in new}

    synced: set[int] = set()
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.add(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    got = push.push(store, remotes.resolve(store.state_dir, repo), "s", Settings())
    monkeypatch.undo()
    assert got["status"] == "pushed"
    assert not os.path.exists(os.path.join(git_dir, MARKER))
    missed = sorted(n for n, ino in _pack_files(git_dir).items() if ino in want - synced)
    assert not missed, f"packs written since the marker left unsynced: {missed}"
    store.close()
    fsck(git_dir)
    fsck(repo)


def test_after_a_power_loss_a_new_pack_dated_before_the_marker_is_still_checked(tmp_path):
    store = store_at(tmp_path / "state")
    store.open_session("s", working_dir=None)
    s = store.session("s")
    add_turn(s, "first")
    s.git.sync()
    git_dir = s.git.git_dir
    durable = set(_pack_files(git_dir))
    committed = [c.to_dict() for c in s.get_branch()]
    add_turn(s, "unsynced")
    marker = os.path.join(git_dir, MARKER)
    with open(marker, "rb") as f:
        assert orjson.loads(f.read())["packs"], "the marker records no pack file"
    zeroed = _lose_power(git_dir)                       # the packs since the marker zeroed...
    assert zeroed
    _step_clock_back(git_dir, durable)                  # ...and dated before it
    store.close()

    again = store_at(tmp_path / "state")
    t = again.session("s")                              # the zeroed pack is found and moved aside
    assert [c.to_dict() for c in t.get_branch()][:len(committed)] == committed
    assert any(c.output == "unsynced" for c in t.get_branch())   # rebuilt from the journal
    lost = os.path.join(t.git.git_dir, "lost")
    assert os.path.isdir(lost) and os.listdir(lost)
    again.close()
    fsck(t.git.git_dir)
