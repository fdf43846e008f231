"""The checkpoint trees a warm snapshot patches (store/checkpoint_trees.py `build`: only the directories on
the way to a changed path) are the trees built from nothing, for any sequence of snapshots: files
added, changed, made executable or links, deleted, directories emptied and made again, a file
turned into a directory, states seen before coming back (hypothesis, on a real session repository);
every tree a patched checkpoint names is stored (it reads back whole)."""

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag.core.checkpoint import MODE_EXEC, MODE_FILE, MODE_LINK, Entry, WorkspaceState
from sessiondag.store import SessionStore
from sessiondag.store import checkpoint_trees, checkpoints as sc

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
        for entries in steps + steps[:2]:       # and back to earlier states: their trees are known
            top = sc.Writer(s.git).finish(WorkspaceState(entries=dict(entries)))
            files = objects[top.encode()][b"files"][1]
            ref = checkpoint_trees.build_all(entries, objects, [], checkpoint_trees.TreeMemo(entries))
            assert files == ref
            back, _ = sc.read(s.git, top)            # every tree it names is stored
            assert {p: (e.mode, e.sha) for p, e in back.items()} == {p: (e.mode, e.sha) for p, e in entries.items()}
    finally:
        store.close()


@pytest.mark.process   # git fsck of the session repository
def test_two_directories_with_the_same_files_share_one_tree(store, workdir):
    """Two identical directories (two empty packages, say) give one tree object: a snapshot of them
    is stored and reads back (it once wrote the tree twice into one pack, whose index then held one
    entry fewer than its data: dulwich refuses to read such a pack, git fsck too)."""
    import subprocess
    from sessiondag.store import checkpoints
    from sessiondag.core.checkpoint import NODE_KEY
    from sessiondag.runtime import Runtime, run_task
    from sessiondag.runtime.providers.scripted import ScriptedProvider
    for d in ("pkg_a", "pkg_b"):
        (workdir / d).mkdir()
        (workdir / d / "__init__.py").write_text("")
    r = run_task("t", working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider([{"text": "ok"}])))
    s = store.session(r.session_id)
    meta = s.get_node(r.user_node_id).metadata[NODE_KEY]
    assert meta["id"] and "error" not in meta and meta["files"] == 2
    store.close()
    s = store.session(r.session_id)          # a fresh reader of the packs
    assert sorted(checkpoints.read(s.git, meta["id"])[0]) == [b"pkg_a/__init__.py", b"pkg_b/__init__.py"]
    subprocess.run(["git", "--git-dir", s.git.git_dir, "fsck", "--strict"], check=True, capture_output=True)
