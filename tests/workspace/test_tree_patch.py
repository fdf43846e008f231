"""The checkpoint trees a warm snapshot patches (store/checkpoints.py `_build`: only the directories on
the way to a changed path) are the trees built from nothing, for any sequence of snapshots: files
added, changed, made executable or links, deleted, directories emptied and made again, a file
turned into a directory (hypothesis, on a real session repository)."""

import hashlib

from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag.core.checkpoint import MODE_EXEC, MODE_FILE, MODE_LINK, Entry, WorkspaceState
from sessiondag.store import SessionStore
from sessiondag.store import checkpoints as sc

NAMES = st.sampled_from([b"a", b"b", b"c.txt", b"d"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map(b"/".join)
ENTRY = st.tuples(st.sampled_from([MODE_FILE, MODE_EXEC, MODE_LINK]), st.integers(0, 3))


def _valid(entries):
    """No path may be both a file and a directory (a working dir cannot hold that)."""
    out = {}
    for p, e in sorted(entries.items(), key=lambda x: len(x[0])):
        parts = p.split(b"/")
        if any(b"/".join(parts[:i]) in out for i in range(1, len(parts))):
            continue
        out[p] = e
    return {p: e for p, e in out.items() if not any(q.startswith(p + b"/") for q in out)}


SNAPSHOT = st.dictionaries(PATHS, ENTRY, max_size=12).map(
    lambda d: _valid({p: Entry(m, hashlib.sha1(b"%d" % v).hexdigest(), 1) for p, (m, v) in d.items()}))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(SNAPSHOT, min_size=1, max_size=6))
def test_patched_trees_equal_trees_built_from_nothing(tmp_path_factory, steps):
    store = SessionStore(str(tmp_path_factory.mktemp("state")))
    try:
        s = store.session(store.open_session("t", working_dir=str(tmp_path_factory.mktemp("wd"))).id)
        objects = s.git.repo.object_store
        for entries in steps:
            top = sc.Writer(s.git).finish(WorkspaceState(entries=dict(entries)))
            files = objects[top.encode()][b"files"][1]
            ref = sc._build_all(entries, objects, [], sc.TreeMemo(entries))
            assert files == ref
    finally:
        store.close()
