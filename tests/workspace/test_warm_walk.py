"""A warm walk (workspace/snapshot.py: the stat cache's rows, plain tuples compared in the walk's
inlined loop; listings whose subdirectories carry no lstat of their own) gives the snapshot a walk
without any cache gives, for any sequence of changes to a real working dir: files written, grown,
rewritten at the same size with the old mtime put back, made executable, turned into links or
directories, deleted; .gitignore files added and changed. The cache is used warm in memory and
read back from its file by a new snapshotter (hypothesis)."""

import os
import shutil
import stat
import tempfile
import time

from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag.workspace.snapshot import Snapshotter

NAMES = st.sampled_from(["a", "b.log", "d"])
PATHS = st.lists(NAMES, min_size=1, max_size=2).map("/".join)
OPS = st.tuples(st.sampled_from(["write", "same_size", "grow", "exec", "link", "delete", "mkdir", "ignore"]),
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
