"""Turn commits fsync nothing; the sync point before a journal rotation makes the snapshots durable;
after a power loss (the unsynced marker names another boot) open drops what the loss damaged and
rebuilds from the last durable snapshot plus the journal, losing nothing acknowledged.

A power loss cannot be caused from a test: the page cache outlives every process. What it may do
to the files written without fsync is done to them by hand (zeroed packs, a torn ref, a pack whose
rename never reached the disk), and the marker is rewritten as the previous boot would have left it.
"""

from __future__ import annotations

import os

import orjson
import pytest

from sessiondag import Call
from sessiondag.core.settings import Settings
from sessiondag.store import SessionStore
from sessiondag.store.snapshot_sync import MARKER
from fsync_count import count_fsyncs
from store_helpers import git
from test_write_faults import assert_fsck_clean, chain

def _session(tmp_path, **settings):
    store = SessionStore(tmp_path / "state", settings=Settings(**settings))
    return store, store.session(store.start_session("pl", working_dir=None).id)


def _as_if_another_boot(s) -> dict:
    path = os.path.join(s.git.git_dir, MARKER)
    with open(path, "rb") as f:
        marker = orjson.loads(f.read())
    st = os.stat(path)
    with open(path, "wb") as f:
        f.write(orjson.dumps({**marker, "boot": "a-boot-before-the-power-loss"}))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as the previous boot left it
    return marker


def _packs_since(s, marker_base: str | None) -> list[str]:
    """The packs the unsynced commits wrote (newer than the marker)."""
    pd = os.path.join(s.git.git_dir, "objects", "pack")
    since = os.stat(os.path.join(s.git.git_dir, MARKER)).st_mtime
    return [os.path.join(pd, n) for n in os.listdir(pd) if n.endswith(".pack") and os.stat(os.path.join(pd, n)).st_mtime >= since]


def test_a_turn_commit_fsyncs_at_most_twice_and_only_the_first_after_a_sync_writes_the_marker(tmp_path, monkeypatch):
    store, s = _session(tmp_path)
    n = count_fsyncs(monkeypatch.setattr)
    counts = []
    for _ in range(40):  # the first (it creates the ref), then enough for several pack merges
        chain(s, 2)
        before = n.n - 2  # the two appends' fdatasyncs are the journal's, not the commit's
        s.commit_turn()
        counts.append(n.n - before - 2)
    assert max(counts) <= 2, counts
    assert sum(counts) <= 2, counts  # the marker once (file + directory), then nothing
    assert os.path.exists(os.path.join(s.git.git_dir, MARKER))
    store.close()


@pytest.mark.process
def test_the_rotation_syncs_everything_and_removes_the_marker(tmp_path):
    store, s = _session(tmp_path, journal_rotate_bytes=3000)
    for _ in range(3):
        chain(s, 2)
        s.commit_turn()
    chain(s, 20)
    s.commit_turn()  # the journal is past 3,000 bytes: synced, then rotated
    assert not os.path.exists(os.path.join(s.git.git_dir, MARKER))
    assert s.journal.size() == s.journal.header_len
    assert_fsck_clean(s.path)
    store.close()


def test_reopening_in_the_same_boot_trusts_the_unsynced_snapshot(tmp_path):
    store, s = _session(tmp_path)
    ids = []
    for _ in range(5):
        ids += chain(s, 2)
        s.commit_turn()
    head, turn = s.git.head(), s.turn
    store.close()
    again = SessionStore(tmp_path / "state")
    t = again.session("pl")
    assert (t.git.head(), t.turn) == (head, turn) and all(i in t.graph.nodes for i in ids)
    assert not os.path.exists(os.path.join(t.git.git_dir, "lost"))
    again.close()


@pytest.mark.process
@pytest.mark.parametrize("damage", ["zeroed-packs", "lost-pack-rename", "torn-ref", "empty-ref"])
@pytest.mark.parametrize("rotated", [False, True], ids=["first-journal", "after-a-rotation"])
def test_after_a_power_loss_open_loses_nothing_acknowledged(tmp_path, damage, rotated):
    store, s = _session(tmp_path, journal_rotate_bytes=2500 if rotated else 1 << 30)
    created = s.journal.journal_id
    ids = []
    for _ in range(3):
        ids += chain(s, 4)
        s.commit_turn()
    assert (s.journal.journal_id != created) == rotated
    first = store   # the same session under a store that no longer rotates (settings are a store's)
    store = SessionStore(tmp_path / "state", settings=Settings(journal_rotate_bytes=1 << 30))
    s = store.session("pl")
    journal = s.journal.journal_id
    for _ in range(4):  # unsynced commits
        ids += chain(s, 2, size=20)
        s.commit_turn()
    assert s.journal.journal_id == journal  # no sync point in between
    ids += chain(s, 2, tag="uncommitted")  # in the journal only
    branch = [c.to_dict() for c in s.get_branch()]
    marker = _as_if_another_boot(s)
    victims = _packs_since(s, marker["base"])
    assert victims
    ref = s.git.ref_path
    store.close()
    first.close()
    if damage == "zeroed-packs":
        for p in victims:
            for path in (p, p[:-5] + ".idx"):
                with open(path, "r+b") as f:
                    f.write(bytes(os.path.getsize(path)))
    elif damage == "lost-pack-rename":
        newest = max(victims, key=os.path.getmtime)
        os.unlink(newest)
        os.unlink(newest[:-5] + ".idx")
    elif damage == "torn-ref":
        with open(ref, "wb") as f:
            f.write(b"\0" * 41)
    else:
        open(ref, "wb").close()
    again = SessionStore(tmp_path / "state")
    t = again.session("pl")
    assert [c.to_dict() for c in t.get_branch()] == branch, "the session differs after the power loss"
    assert all(i in t.graph.nodes for i in ids)
    assert not os.path.exists(os.path.join(t.git.git_dir, MARKER))  # recovered and synced
    lost = os.path.join(t.git.git_dir, "lost")
    assert os.path.isdir(lost) == (damage == "zeroed-packs")  # intact packs stay where they are
    more = chain(t, 2, tag="after")
    assert t.commit_turn() is not None
    assert_fsck_clean(t.path)
    again.close()
    third = SessionStore(tmp_path / "state")
    u = third.session("pl")
    assert all(i in u.graph.nodes for i in ids + more)
    assert git(u.git.git_dir, "cat-file", "-t", "refs/heads/main").stdout.strip() == "commit"
    third.close()
