"""Warm snapshots from the watcher's dirty paths: a real inotify watch (workspace/binding.py), the
barrier that proves every change before it was delivered, and a walk to compare with."""

import os
import threading
import time

import anyio
import pytest

from sessiondag.workspace.binding import WorkspaceBinding
from sessiondag.workspace.snapshot import Snapshotter


async def _noop(*a):
    return None


def _bind(snap, barrier_dir):
    """A real working-dir watcher feeding `snap` its dirty paths, with its barrier."""
    b = WorkspaceBinding(_noop, _noop, _noop)
    b.barrier.dir = str(barrier_dir)
    b.on_dirty = lambda sid, rels: snap.mark_dirty(rels)
    b.on_watching = lambda dirs: (setattr(snap, "watching", snap.root in dirs), snap.lost_events())
    snap.barrier = b.barrier.wait
    return b


def take(snap):
    seen: set = set()
    state = snap.take(lambda sha: sha in seen, lambda sha, data: seen.add(sha))
    snap.stored(state)
    return state


@pytest.mark.anyio
async def test_dirty_snapshot_equals_a_walk(tmp_path):
    wd, barrier_dir = tmp_path / "work", tmp_path / "barrier"
    wd.mkdir()
    barrier_dir.mkdir()
    for i in range(30):
        (wd / f"d{i % 3}").mkdir(exist_ok=True)
        (wd / f"d{i % 3}" / f"f{i}.txt").write_text(f"{i}\n")
    (wd / ".gitignore").write_text("*.log\n")
    past = time.time() - 10
    for d, _, names in os.walk(wd):
        for n in names:
            os.utime(os.path.join(d, n), (past, past))   # older than the racy window: the cache holds
    snap = Snapshotter(str(wd), str(tmp_path / "cache"))
    b = _bind(snap, barrier_dir)
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.run)
        b.add("s", str(wd))
        assert await b.wait_watching("s")
        first = await anyio.to_thread.run_sync(take, snap)        # a walk; dirty marks count from here
        assert first.mode == "walk" and snap.watching

        def edit():
            (wd / "d1" / "f1.txt").write_text("changed\n")
            (wd / "d2" / "f2.txt").unlink()
            (wd / "new").mkdir()
            (wd / "new" / "n.txt").write_text("n\n")
            os.symlink("d0/f0.txt", wd / "ln")
            (wd / "x.log").write_text("ignored\n")
            os.chmod(wd / "d0" / "f3.txt", 0o755)
            snap.sync()
            return take(snap)
        warm = await anyio.to_thread.run_sync(edit)
        assert warm.mode == "dirty" and warm.examined < 10
        walked = Snapshotter(str(wd), None)
        full = await anyio.to_thread.run_sync(take, walked)
        assert warm.entries == full.entries
        assert b"x.log" not in warm.entries and b"new/n.txt" in warm.entries and b"d2/f2.txt" not in warm.entries
        # without the barrier (no sync), the next snapshot walks
        (wd / "late.txt").write_text("late\n")
        again = await anyio.to_thread.run_sync(take, snap)
        assert again.mode == "walk" and b"late.txt" in again.entries
        b.close()
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_write_just_before_the_snapshot_is_in_it(tmp_path):
    """The last writes of a turn, made right before its snapshot (no pause): the barrier holds the
    snapshot until the watcher has marked them dirty, so each is in it (with a barrier that
    returned at once, the dirty marks would lag and the snapshot would keep the old entries)."""
    from sessiondag.core.checkpoint import blob_id
    wd, barrier_dir = tmp_path / "work", tmp_path / "barrier"
    (wd / "d").mkdir(parents=True)
    barrier_dir.mkdir()
    (wd / "d" / "hot.txt").write_text("0\n")
    snap = Snapshotter(str(wd), str(tmp_path / "cache"))
    b = _bind(snap, barrier_dir)
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.run)
        b.add("s", str(wd))
        assert await b.wait_watching("s")
        assert (await anyio.to_thread.run_sync(take, snap)).mode == "walk"

        def rounds():
            for i in range(1, 16):
                data = b"round %d\n" % i
                (wd / "d" / "hot.txt").write_bytes(data)          # changed in place
                (wd / "d" / f"new{i}.txt").write_bytes(data)      # made
                if i > 1:
                    (wd / "d" / f"new{i - 1}.txt").unlink()       # removed
                snap.sync()
                got = take(snap)
                assert got.mode == "dirty"
                assert got.entries[b"d/hot.txt"].sha == blob_id(data), i
                assert got.entries[b"d/new%d.txt" % i].sha == blob_id(data), i
                assert b"d/new%d.txt" % (i - 1) not in got.entries, i
        try:
            await anyio.to_thread.run_sync(rounds)
            assert len(os.listdir(barrier_dir)) == 1      # the barriers passed before the last are gone
        finally:
            b.close()                                     # (else the watcher's thread keeps the test)
            tg.cancel_scope.cancel()
        assert os.listdir(barrier_dir) == []


def test_time_budget_falls_back_to_the_previous_entries(tmp_path):
    wd = tmp_path / "work"
    for i in range(50):
        (wd / f"d{i}").mkdir(parents=True)
        (wd / f"d{i}" / "f.txt").write_text(str(i))
    snap = Snapshotter(str(wd), str(tmp_path / "cache"))
    first = take(snap)
    assert first.partial is None and len(first.entries) == 50
    snap.limits = type(snap.limits)(snap.limits.max_file_bytes, snap.limits.max_snapshot_bytes, 0.0)
    (wd / "d7" / "f.txt").write_text("changed")
    late = take(snap)
    assert late.partial == "budget" and len(late.entries) == 50      # nothing lost, says it is partial
