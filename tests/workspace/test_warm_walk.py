"""A warm walk (workspace/snapshot.py: the stat cache's rows, plain tuples compared in the walk's
inlined loop; listings whose subdirectories carry no lstat of their own) gives the snapshot a walk
without any cache gives, for any sequence of changes to a real working dir: files written, grown,
rewritten at the same size with the old mtime put back, made executable, turned into links or
directories, deleted, renamed; .gitignore files added and changed. The cache is used warm in memory
and read back from its file by a new snapshotter (hypothesis).

The listings a warm walk reuses (workspace/listings.py: a directory whose mtime, ctime and inode are
the cached ones is not read again, only the files it names are lstat'ed) are held to the same: with
the racy window opened wide (every directory trusted) and the filesystem clock past every ctime
before each change (so a change in a trusted directory always moves its ctime, as git's racy rule
assumes), any sequence of changes gives the walk without a cache; and a directory changed within
the racy window is read again even when its stat looks the same."""

import os
import shutil
import stat
import tempfile
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag.workspace.snapshot import Snapshotter

NAMES = st.sampled_from(["a", "b.log", "d"])
PATHS = st.lists(NAMES, min_size=1, max_size=2).map("/".join)
OPS = st.tuples(st.sampled_from(["write", "same_size", "grow", "exec", "link", "delete", "mkdir", "ignore",
                                 "rename"]),
                PATHS, st.integers(0, 3))
PAST = time.time() - 100      # mtimes older than the racy window: the cache trusts the rows


def take(snap):
    seen: set = set()
    state = snap.take(lambda sha: sha in seen, lambda sha, data: seen.add(sha))
    snap.stored(state)
    return state


def _clear(p):
    if os.path.islink(p) or os.path.isfile(p):
        os.unlink(p)
    elif os.path.isdir(p):
        shutil.rmtree(p)


def _apply(wd, op, rel, v, step):
    p = os.path.join(wd, rel)
    parent = os.path.dirname(p)
    parts = rel.split("/")
    for i in range(1, len(parts)):   # a file or link where a directory must be goes
        q = os.path.join(wd, *parts[:i])
        if os.path.islink(q) or os.path.lexists(q) and not os.path.isdir(q):
            _clear(q)
    os.makedirs(parent, exist_ok=True)
    if op == "delete":
        _clear(p)
        return
    if op == "rename":               # within the same second as the change before: only ctimes tell
        target = os.path.join(parent, ["a", "b.log", "d", "c"][v])
        if os.path.lexists(p) and target != p:
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            if os.path.isdir(p) and not os.path.islink(p) and os.path.lexists(target):
                os.unlink(target)
            os.rename(p, target)
        return
    if op == "mkdir":
        _clear(p) if not os.path.isdir(p) or os.path.islink(p) else None
        os.makedirs(p, exist_ok=True)
        return
    if op == "ignore":
        with open(os.path.join(parent, ".gitignore"), "w") as f:
            f.write(["*.log\n", "a\n", "d/\n", ""][v])
        return
    if os.path.isdir(p) and not os.path.islink(p):
        _clear(p)
    if op == "link":
        _clear(p)
        os.symlink(["a", "../b.log", "d", "nowhere"][v], p)
        return
    if os.path.islink(p):
        _clear(p)
    if op == "exec":
        if not os.path.exists(p):
            open(p, "wb").close()
        os.chmod(p, os.stat(p).st_mode ^ stat.S_IXUSR)
        return
    old = os.stat(p) if os.path.exists(p) else None
    data = b"%d.%d\n" % (v, step)
    if op == "grow" and old is not None:
        with open(p, "ab") as f:
            f.write(data)
    else:
        if op == "same_size" and old is not None:
            data = (data * (old.st_size // len(data) + 1))[:old.st_size]
        with open(p, "wb") as f:
            f.write(data)
    when = old.st_mtime_ns if op == "same_size" and old is not None else int((PAST + step) * 1e9)
    os.utime(p, ns=(when, when))   # the same size and mtime: only ctime (and the content) tell


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.lists(OPS, min_size=1, max_size=4), min_size=1, max_size=4))
def test_a_warm_walk_equals_a_walk_without_a_cache(steps):
    tmp = tempfile.mkdtemp(prefix="warm-walk-")
    try:
        wd, cache = os.path.join(tmp, "work"), os.path.join(tmp, "cache")
        os.makedirs(wd)
        warm = Snapshotter(wd, cache)
        take(warm)
        for i, ops in enumerate(steps):
            for op, rel, v in ops:
                _apply(wd, op, rel, v, i)
            for d, _, names in os.walk(wd):     # and every file rewritten in place, same size and mtime
                for n in names:
                    if not os.path.islink(os.path.join(d, n)) and n != ".gitignore":
                        _apply(wd, "same_size", os.path.relpath(os.path.join(d, n), wd), 3, i + 7)
            got = take(warm)
            reread = take(Snapshotter(wd, cache))    # the cache read back from its file
            full = take(Snapshotter(wd, None))
            assert got.mode == "walk" and got.partial is None
            assert got.entries == full.entries
            assert reread.entries == full.entries
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _past_every_ctime(wd, probe):
    """Wait until the filesystem's clock (a probe file's ctime, same filesystem) is past every ctime
    under `wd`: a change from now on moves the ctime of what it changes. A readiness wait on the
    clock tick (a few ms), not a sleep."""
    newest = max(os.lstat(os.path.join(d, n)).st_ctime_ns
                 for d, dirs, names in os.walk(wd) for n in dirs + names + ["."])
    while True:
        with open(probe, "wb") as f:
            f.write(b"x")
        if os.lstat(probe).st_ctime_ns > newest:
            return


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.lists(OPS, min_size=1, max_size=4), min_size=1, max_size=4))
def test_reused_listings_give_the_walk_without_a_cache(steps):
    tmp = tempfile.mkdtemp(prefix="warm-list-")
    try:
        wd, cache, probe = os.path.join(tmp, "work"), os.path.join(tmp, "cache"), os.path.join(tmp, "probe")
        os.makedirs(os.path.join(wd, "d"))
        _apply(wd, "write", "d/a", 0, 0)
        warm = Snapshotter(wd, cache)
        warm.clock = lambda: time.time_ns() + 10**10    # every directory counts as older than the racy window
        take(warm)
        reused = 0
        for i, ops in enumerate(steps + [[]]):           # a last step with no change: every listing reused
            _past_every_ctime(wd, probe)
            for op, rel, v in ops:
                _apply(wd, op, rel, v, i)
            got = take(warm)
            reused += warm.reused
            reread = Snapshotter(wd, cache)
            reread.clock = warm.clock
            again = take(reread)
            full = take(Snapshotter(wd, None))
            assert got.mode == "walk" and got.partial is None
            assert got.entries == full.entries
            assert again.entries == full.entries
        assert warm.reused == warm.listed == reread.reused > 0    # the last step changed nothing
        assert reused >= warm.reused
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_directory_changed_within_the_racy_window_is_read_again(tmp_path):
    """The real racy rule: a listing taken less than RACY_NS after its directory changed is not
    kept (a change in the same clock tick could leave the directory's stat as it was)."""
    wd = tmp_path / "work"
    (wd / "d").mkdir(parents=True)
    (wd / "d" / "a").write_bytes(b"a")
    snap = Snapshotter(str(wd), str(tmp_path / "cache"))
    take(snap)
    (wd / "d" / "b").write_bytes(b"b")     # at once: within the window of the listing before
    got = take(snap)
    assert snap.reused == 0
    assert sorted(got.entries) == [b"d/a", b"d/b"]
    snap.clock = lambda: time.time_ns() + 2 * 10**9   # a clock 2 s on: both directories are old enough now
    take(snap)
    assert snap.reused == 0               # the listings of the last walk were racy: read again, now kept
    assert take(snap).entries == got.entries and snap.reused == 2


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.lists(OPS, min_size=1, max_size=4), min_size=2, max_size=6))
def test_walks_after_snapshots_of_dirty_paths_give_the_walk_without_a_cache(steps):
    """A listing keeps the rows its walk kept (listings.py); a snapshot of the dirty paths alone
    (a watcher's marks) changes rows without touching the listings of their directories. Walks and
    such snapshots in turn, every listing trusted: each gives the walk without a cache."""
    tmp = tempfile.mkdtemp(prefix="warm-dirty-")
    try:
        wd, cache, probe = os.path.join(tmp, "work"), os.path.join(tmp, "cache"), os.path.join(tmp, "probe")
        os.makedirs(os.path.join(wd, "d"))
        _apply(wd, "write", "d/a", 0, 0)
        warm = Snapshotter(wd, cache)
        warm.clock = lambda: time.time_ns() + 10**10
        warm.watching, warm.barrier = True, lambda: True
        take(warm)
        for i, ops in enumerate(steps):
            _past_every_ctime(wd, probe)
            marks = set()
            for op, rel, v in ops:
                _apply(wd, op, rel, v, i)
                parts = rel.split("/")
                marks.update("/".join(parts[:j]) for j in range(1, len(parts) + 1))
                marks.update(os.path.join(os.path.dirname(rel), n) for n in ("a", "b.log", "d", "c"))
                if op == "ignore":
                    marks.add(os.path.join(os.path.dirname(rel), ".gitignore"))   # then the next one walks
            warm.mark_dirty(marks)
            if i % 2:
                warm.sync()       # the marks are complete: this one looks at them alone
            got = take(warm)
            ruled = any(op == "ignore" for op, _, _ in ops)
            assert got.mode == ("dirty" if i % 2 and not ruled else "walk")
            full = take(Snapshotter(wd, None))
            assert got.entries == full.entries, (i, got.mode)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.process   # a child process (tests/tiers.py)
def test_a_link_to_a_directory_is_a_link_to_the_ignore_rules(tmp_path):
    """A directory-only pattern (`d/`) leaves out directories, never a symlink named so, even one
    pointing at a directory: git records such a link (`git add -A` here says so), and so does a
    snapshot (dulwich's ignore module asked the file system, following the link)."""
    import subprocess
    wd = tmp_path / "work"
    (wd / "real").mkdir(parents=True)
    (wd / "real" / "f").write_text("f\n")
    (wd / "x").mkdir()
    (wd / ".gitignore").write_text("d/\n")
    os.symlink("real", wd / "d")
    os.symlink("../real", wd / "x" / "d")
    (wd / "d2").mkdir()
    (wd / "d2" / "d").mkdir()                     # a real directory of that name: left out
    (wd / "d2" / "d" / "g").write_text("g\n")
    subprocess.run(["git", "init", "-q"], cwd=wd, check=True)
    subprocess.run(["git", "add", "-A"], cwd=wd, check=True)
    tracked = subprocess.run(["git", "ls-files"], cwd=wd, check=True, capture_output=True).stdout.split()
    got = take(Snapshotter(str(wd), None))
    assert sorted(got.entries) == sorted(tracked) == [b".gitignore", b"d", b"real/f", b"x/d"]
