"""A turn commit and an append are all-or-nothing under real faults: a full tmpfs, a read-only
remount, an exception at each step of the commit. Afterwards memory is as before, the journal
holds every acknowledged node, and once the cause is gone the next commit makes a complete history
that `git fsck --strict` accepts and that reopens."""

import errno
import os
from contextlib import contextmanager

import dulwich.objects
import pytest

from sessiondag import Call
from sessiondag.core.errors import StorageError, StorageFullError
from sessiondag.store import SessionStore
from sessiondag.store import gitstore, packs, raw_objects, snapshot_sync
from fault_fs import Filler, remount, small_tmpfs
from store_helpers import git

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


def assert_fsck_clean(path):
    gd = os.path.join(path, "git")
    r = git(gd, "fsck", "--strict", "--no-dangling")
    assert r.returncode == 0 and "error" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    return int(git(gd, "rev-list", "--count", "refs/heads/main").stdout.strip() or 0)


def chain(s, n, size=200, tag="n"):
    ids = []
    for i in range(n):
        c = s.append(Call("user", tag, output=f"{tag}{i} " + "x" * size, predecessor=s.head_id))
        ids.append(c.id)
    return ids


def state_of(s):
    """Everything the store keeps about the commit side, in memory and on disk. (Not the journal
    offset: a commit first journals the aging boundary it derives, a normal durable write.)"""
    return (s.turn, s.catch_up.committed, s.open_turn, sorted(s.catch_up.dirty), s.catch_up.usage_at_commit,
            s.git.head(), len(s.graph.nodes), tree_cache_matches_disk(s))


def tree_cache_matches_disk(s):
    """The commit path's tree cache (edited in place by a commit) describes its base commit as
    stored on disk: every cached tree is the tree at that path (or empty where there is none)."""
    from dulwich.repo import Repo
    if not s.git._trees:
        return True
    repo = Repo(s.git.git_dir)
    try:
        root = repo[repo[s.git._base].tree] if s.git._base else None
        for path, tree in s.git._trees.items():
            node = root
            for part in [p for p in path.split(b"/") if p]:
                node = repo[node[part][1]] if node is not None and part in node else None
            want = node.id if node is not None else dulwich.objects.Tree().id
            if tree.id != want:
                return False
        return True
    finally:
        repo.close()


@contextmanager
def session_on_tmpfs(tmp_path, size, sid):
    """(mount point, state dir, store, a new session) on a small tmpfs, unmounted afterwards."""
    with small_tmpfs(tmp_path / "fs", size) as fs:
        state = os.path.join(fs, "state")
        store = SessionStore(state)
        yield fs, state, store, store.session(store.start_session(sid, working_dir=None).id)


def reopen_check(state, sid, expect_ids):
    store = SessionStore(state)
    try:
        s = store.session(sid)
        missing = [i for i in expect_ids if i not in s.graph.nodes]
        assert not missing, f"{len(missing)} acknowledged node(s) lost"
        assert s.get_branch() or not expect_ids
        return s.turn
    finally:
        store.close()


# dulwich's loose-object writer, failing with ENOSPC, fails its cleanup again in __del__ (flush of
# the buffered body); the store removes its lock file itself — the late warning is dulwich's noise
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_commit_on_a_full_tmpfs_changes_nothing_and_recovers(tmp_path):
    with session_on_tmpfs(tmp_path, "3m", "full") as (fs, state, store, s):
        acked = chain(s, 5)
        assert s.commit_turn() is not None
        for _ in range(3):  # a few commits, so the tree cache holds trees the next commit edits
            acked += chain(s, 5)
            s.commit_turn()
        acked += chain(s, 20, size=3000)
        before = state_of(s)
        filler = Filler(fs)
        filler.fill()
        with pytest.raises(StorageFullError) as ei:
            s.commit_turn()
        assert ei.value.errno == errno.ENOSPC and ei.value.data()["errno_name"] == "ENOSPC"
        assert state_of(s) == before, "a failed commit changed the session"
        with pytest.raises(StorageFullError):  # still full: the same refusal, still nothing changed
            s.commit_turn()
        assert state_of(s) == before
        # a body big enough to be spilled needs a new file: refused, nothing visible
        with pytest.raises(StorageFullError):
            s.append(Call("user", "big", output="y" * 200_000, predecessor=s.head_id))
        assert state_of(s) == before
        other = SessionStore(state)  # another reader sees exactly the acknowledged nodes
        try:
            assert set(other.session("full").graph.nodes) == set(s.graph.nodes)
        finally:
            other.close()
        filler.free()
        acked += chain(s, 2)
        big = s.append(Call("user", "big", output="y" * 200_000, predecessor=s.head_id))
        acked.append(big.id)
        assert s.commit_turn() is not None
        assert s.turn == before[0] + 1
        commits = assert_fsck_clean(s.path)
        assert commits == s.turn
        store.close()
        assert reopen_check(state, "full", acked) == commits


def test_appends_on_a_full_tmpfs_are_refused_whole_and_the_session_goes_on(tmp_path):
    with session_on_tmpfs(tmp_path, "3m", "app") as (fs, state, store, s):
        acked = chain(s, 3)
        filler = Filler(fs)
        filler.fill()
        refused = 0
        # appends fill the journal's preallocated zeros, then need a new block: refused there
        for i in range(400):
            try:
                acked.append(s.append(Call("user", "u", output=f"{i} " + "z" * 4000, predecessor=s.head_id)).id)
            except StorageFullError as e:
                assert e.errno == errno.ENOSPC
                refused += 1
                break
        assert refused, "the journal never ran out of room"
        n = len(s.graph.nodes)
        with pytest.raises(StorageFullError):  # a batch: none of it
            s.append_many([Call("user", "b", output="q" * 5000, predecessor=s.head_id)] * 1)
        assert len(s.graph.nodes) == n and set(acked) <= set(s.graph.nodes)
        other = SessionStore(state)
        try:
            assert set(other.session("app").graph.nodes) == set(s.graph.nodes)
        finally:
            other.close()
        filler.free()
        acked += chain(s, 60, size=4000)  # past the old end of the padding: the journal grows again
        assert s.commit_turn() is not None
        seqs = sorted(c.seq for c in s.graph.nodes.values())
        assert seqs == list(range(len(seqs)))
        assert_fsck_clean(s.path)
        store.close()
        reopen_check(state, "app", acked)


def test_read_only_remount_refuses_writes_typed_and_recovers(tmp_path):
    with session_on_tmpfs(tmp_path, "8m", "ro") as (fs, state, store, s):
        acked = chain(s, 4)
        s.commit_turn()
        acked += chain(s, 3)
        store.close()  # a read-only remount needs no file open for writing
        remount(fs, "ro")
        store = SessionStore(state)
        s = store.session("ro")  # reading works on a read-only filesystem
        assert set(acked) <= set(s.graph.nodes)
        before = state_of(s)
        with pytest.raises(StorageError) as ei:
            s.append(Call("user", "u", output="nope", predecessor=s.head_id))
        assert ei.value.errno == errno.EROFS and not isinstance(ei.value, StorageFullError)
        with pytest.raises(StorageError) as ei:
            s.commit_turn()
        assert ei.value.errno == errno.EROFS
        assert state_of(s) == before
        remount(fs, "rw")
        acked += chain(s, 2)  # the same objects write again once the filesystem is writable
        assert s.commit_turn() is not None
        assert assert_fsck_clean(s.path) == s.turn == 2
        store.close()
        reopen_check(state, "ro", acked)


def _fail_at(monkeypatch, owner, name, k=1, exc=None, after=False, when=None):
    """Make owner.name raise on its k-th call (or, `after`, once the real call has run); `when`
    picks the calls that count (by their arguments)."""
    real = getattr(owner, name)
    calls = {"n": 0}
    err = exc or OSError(errno.EIO, "Input/output error (injected)")

    def wrapper(*a, **kw):
        if when is not None and not when(*a):
            return real(*a, **kw)
        calls["n"] += 1
        if calls["n"] == k:
            if after:
                real(*a, **kw)
            raise err
        return real(*a, **kw)
    monkeypatch.setattr(owner, name, wrapper)
    return calls


def _ref_write(fd, data, offset):
    """The commit's in-place ref update: 40 hex digits and a newline at offset 0."""
    return offset == 0 and len(data) == 41 and data.endswith(b"\n")


# (step, how to break it, does the commit still succeed?)
STEPS = {
    "tree-building": (lambda mp: _fail_at(mp, raw_objects, "blob", 2, RuntimeError("boom")), False),
    "pack-data": (lambda mp: _fail_at(mp, packs, "write_pack_data", exc=OSError(errno.ENOSPC, "No space left")), False),
    # a commit fsyncs nothing but the unsynced marker, the first after a sync point (snapshot_sync.py)
    "unsynced-marker": (lambda mp: _fail_at(mp, snapshot_sync, "write_file_atomic"), False),
    "pack-index": (lambda mp: _fail_at(mp, packs, "pack_index", exc=MemoryError()), False),
    # the pack is written under its own name, then its index under a temp name renamed in (packs.py)
    "pack-write": (lambda mp: _fail_at(mp, packs, "write_all", exc=OSError(errno.ENOSPC, "No space left"),
                                       when=lambda fd, data, where: where.endswith(".pack")), False),
    "index-write": (lambda mp: _fail_at(mp, packs, "write_all", exc=OSError(errno.ENOSPC, "No space left"),
                                        when=lambda fd, data, where: where.endswith(".idx-tmp")), False),
    "index-rename": (lambda mp: _fail_at(mp, os, "rename"), False),
    "ref-update": (lambda mp: _fail_at(mp, os, "pwrite", exc=OSError(errno.EDQUOT, "Disk quota exceeded"),
                                       when=_ref_write), False),
    "after-ref-update": (lambda mp: _fail_at(mp, os, "pwrite", after=True, when=_ref_write), False),
    "pack-maintenance": (lambda mp: _fail_at(mp, packs, "remove_garbage", exc=OSError(errno.ENOSPC, "full")), True),
    "journal-rotation": (lambda mp: _fail_at(mp, os, "replace", exc=OSError(errno.ENOSPC, "full"),
                                             when=lambda src, dst: str(dst).endswith("journal.log")), True),
}


@pytest.mark.parametrize("closing_bucket", [False, True], ids=["turn", "bucket-closing-turn"])
@pytest.mark.parametrize("step", sorted(STEPS))
def test_an_exception_at_any_commit_step_changes_nothing(tmp_path, monkeypatch, step, closing_bucket):
    monkeypatch.setenv("SESSIONDAG_JOURNAL_ROTATE_BYTES", "1" if step == "journal-rotation" else "100000000")
    state = tmp_path / "state"
    store = SessionStore(state)
    s = store.session(store.start_session("inj", working_dir=None).id)
    acked = []
    commits = gitstore.FANOUT - 2 if closing_bucket else 3
    for _ in range(commits):  # a closing turn compacts the 63 chunks before it
        acked += chain(s, 2, size=50)
        s.commit_turn()
    acked += chain(s, 3, size=50)
    acked.append(s.append(Call("user", "big", output="b" * 70_000, predecessor=s.head_id)).id)  # spilled
    if step == "unsynced-marker":
        s.git.sync()  # a sync point: the next commit writes the marker first
    before = state_of(s)
    pack_dir = os.path.join(s.path, "git", "objects", "pack")
    files_before = sorted(os.listdir(pack_dir))
    inject, succeeds = STEPS[step]
    with monkeypatch.context() as mp:
        inject(mp)
        if succeeds:
            assert s.commit_turn() is not None
        else:
            with pytest.raises((StorageError, RuntimeError, MemoryError)) as ei:
                s.commit_turn()
            if isinstance(ei.value, StorageError):
                assert ei.value.errno in (errno.EIO, errno.ENOSPC, errno.EDQUOT)
                assert isinstance(ei.value, StorageFullError) == (ei.value.errno != errno.EIO)
            after = state_of(s)
            if step == "after-ref-update":  # the ref did move: the disk is ahead, memory is not
                assert after[:5] == before[:5] and after[6:] == before[6:]
            else:
                assert after == before, "a failed commit changed the session"
                # nothing half-written is left: no temp file, no pack without its index (a whole
                # pack the ref never came to name is unreferenced, as after a kill)
                left = set(os.listdir(pack_dir)) - set(files_before)
                assert {n.rsplit(".", 1)[0] for n in left if n.endswith(".pack")} == \
                    {n.rsplit(".", 1)[0] for n in left if n.endswith(".idx")}, left
                assert all(n.endswith((".pack", ".idx")) for n in left), left
    acked += chain(s, 2, size=50)
    assert s.commit_turn() is not None
    assert not s.open_turn
    n = assert_fsck_clean(s.path)
    assert n == s.turn
    store.close()
    assert reopen_check(state, "inj", acked) == n


def test_a_failed_journal_sync_unwrites_the_record(tmp_path, monkeypatch):
    state = tmp_path / "state"
    store = SessionStore(state)
    s = store.session(store.start_session("sync", working_dir=None).id)
    acked = chain(s, 3)
    n, end = len(s.graph.nodes), s.journal.offset  # (state_of leaves the offset out; here it counts)
    with monkeypatch.context() as mp:
        _fail_at(mp, os, "fdatasync")
        with pytest.raises(StorageError) as ei:
            s.append(Call("user", "lost", output="never acknowledged", predecessor=s.head_id))
        assert ei.value.errno == errno.EIO
    assert len(s.graph.nodes) == n and s.journal.offset == end
    with open(os.path.join(s.path, "journal.log"), "rb") as f:
        assert b"never acknowledged" not in f.read()
    other = SessionStore(state)
    try:
        assert len(other.session("sync").graph.nodes) == n
    finally:
        other.close()
    # a group commit whose one fdatasync fails: none of the group stays, in memory or on disk
    with monkeypatch.context() as mp:
        _fail_at(mp, os, "fdatasync")
        with pytest.raises(StorageError):
            with s.batched():
                chain(s, 4, tag="grouped")
    assert len(s.graph.nodes) == n
    with open(os.path.join(s.path, "journal.log"), "rb") as f:
        assert b"grouped" not in f.read()
    acked += chain(s, 2)
    assert [c.seq for c in s.get_branch()][-1] == n + 1
    s.commit_turn()
    assert_fsck_clean(s.path)
    store.close()
    reopen_check(state, "sync", acked)
