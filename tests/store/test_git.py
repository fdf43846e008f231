"""The git side: one commit per turn, real git accepts it, commits touch only changed subtrees,
packs stay bounded, spilled bodies are stored once and reachable."""

import os

import pytest

from sessiondag import Call, ROOT
from sessiondag.store import SessionStore
from sessiondag.store.gitstore import FANOUT
from sessiondag.store.packs import SEALED_PACK_BYTES, TIER_WIDTH, tier_of
from store_helpers import git

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


def _session(tmp_path, sid="g"):
    store = SessionStore(tmp_path / "state")
    store.start_session(sid, working_dir=tmp_path)
    return store, store.session(sid)


def test_one_commit_per_turn_with_a_describing_message(tmp_path):
    store, s = _session(tmp_path)
    gd = os.path.join(s.path, "git")
    u = s.append(Call("user", "u", output="please   fix\nthe bug", predecessor=ROOT))
    s.append(Call("llm", "m", output="done", predecessor=u.id))
    c1 = s.commit_turn()
    u2 = s.append(Call("user", "u", output="again", predecessor=s.head_id))
    s.append(Call("llm", "m", predecessor=u2.id, status="error",
                  metadata={"error": {"type": "X", "message": "boom", "trace": ""}}))
    c2 = s.commit_turn()
    u3 = s.append(Call("user", "u", output="retry", predecessor=u2.id))
    s.append(Call("llm", "m", predecessor=u3.id, status="cancelled"))
    c3 = s.commit_turn("custom message")
    assert s.commit_turn() is None
    log = git(gd, "log", "--format=%H %s").stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in log] == [c3, c2, c1]
    subjects = [line.split(" ", 1)[1] for line in log]
    assert subjects[0] == "custom message"
    assert subjects[1].startswith("turn 2: error") and "again" in subjects[1]
    assert subjects[2].startswith("turn 1: completed") and "please fix the bug" in subjects[2]
    assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
    assert git(gd, "symbolic-ref", "HEAD").stdout.strip() == "refs/heads/main"
    meta = git(gd, "show", "HEAD:meta.json").stdout
    assert f'"head_id": "{s.head_id}"' in meta
    store.close()


def test_commit_writes_only_the_turns_chunk_and_its_trees(tmp_path):
    store, s = _session(tmp_path)
    gd = os.path.join(s.path, "git")
    prev = ROOT
    for i in range(FANOUT * 2 + 10):  # more than two buckets of turns: compaction happened
        u = s.append(Call("user", "u", output=f"q{i}", predecessor=prev))
        prev = s.append(Call("llm", "m", output=f"a{i}", predecessor=u.id)).id
        s.commit_turn()
    files = git(gd, "ls-tree", "-r", "--name-only", "HEAD", "nodes").stdout.split()
    assert files[:2] == ["nodes/0000/00.jsonl", "nodes/0000/01.jsonl"]  # closed buckets: one chunk each
    assert all(f.startswith("nodes/0000/02/") for f in files[2:]) and len(files) == 2 + 11  # turns count from 1
    s.append(Call("user", "u", output="tail", predecessor=prev))
    s.commit_turn()
    changed = git(gd, "diff-tree", "-r", "--name-only", "HEAD~1", "HEAD").stdout.split()
    assert changed == ["index/0000/02/11.json", "meta.json", "nodes/0000/02/11.jsonl"]
    added = git(gd, "show", "HEAD:nodes/0000/02/11.jsonl").stdout.splitlines()
    assert len(added) == 1 and '"tail"' in added[0]
    ixfiles = git(gd, "ls-tree", "-r", "--name-only", "HEAD", "index").stdout.split()
    assert ixfiles == ["index/" + f[len("nodes/"):-len("l")] for f in files + ["nodes/0000/02/11.jsonl"]]
    # the objects one commit adds: commit, root, meta.json; nodes/, two bucket trees, the chunk;
    # the same four for its index under index/
    new = git(gd, "rev-list", "--objects", "HEAD", "--not", "HEAD~1").stdout.split("\n")
    assert len([x for x in new if x]) == 11
    # an update to an old node goes into the new turn's chunk; the old chunk is not rewritten
    first = s.get_branch()[0]
    s.update(first.id, metadata={"note": 1})
    s.commit_turn()
    changed = git(gd, "diff-tree", "-r", "--name-only", "HEAD~1", "HEAD").stdout.split()
    assert changed == ["index/0000/02/12.json", "meta.json", "nodes/0000/02/12.jsonl"]
    store.close()
    store = SessionStore(tmp_path / "state")
    s = store.session("g")
    assert s.get_node(first.id).metadata == {"note": 1}
    assert [c.seq for c in s.get_branch()] == sorted(c.seq for c in s.get_branch())
    assert len(s.graph.nodes) == 1 + 2 * (FANOUT * 2 + 10) + 1
    store.close()


def test_packs_stay_bounded(tmp_path):
    store, s = _session(tmp_path)
    packdir = os.path.join(s.path, "git", "objects", "pack")
    prev = ROOT
    os.environ["SESSIONDAG_NODE_SPILL"] = "100"
    try:
        for i in range(300):
            prev = s.append(Call("user" if i % 2 == 0 else "llm", "m", output=f"{i}" * 200, predecessor=prev)).id
            s.commit_turn()
            packs = [f for f in os.listdir(packdir) if f.endswith(".pack")]
            assert len(packs) <= TIER_WIDTH * (tier_of(SEALED_PACK_BYTES) + 1)
    finally:
        del os.environ["SESSIONDAG_NODE_SPILL"]
    objdir = os.path.join(s.path, "git", "objects")
    loose = sum(len(os.listdir(os.path.join(objdir, d))) for d in os.listdir(objdir) if len(d) == 2)
    assert loose < 64
    assert git(os.path.join(s.path, "git"), "fsck", "--strict", "--no-dangling").returncode == 0
    store.close()
    store = SessionStore(tmp_path / "state")
    assert len(store.session("g").get_branch()) == 300
    store.close()


def test_spilled_bodies_round_trip_and_are_reachable(tmp_path, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_NODE_SPILL", "1000")
    store, s = _session(tmp_path)
    big = "line of output\n" * 500
    u = s.append(Call("user", "u", output=big, predecessor=ROOT))
    again = s.append(Call("llm", "m", output=big, predecessor=u.id))
    assert u.output["$blob"] == again.output["$blob"] and u.metadata["spilled"] == ["output"]
    assert s.full_value(u.output) == big
    t = s.append(Call("code", "t", caller=again.id, status="running"))
    s.update(t.id, output={"rows": list(range(500))}, status="completed")
    assert s.full_value(s.get_node(t.id).output) == {"rows": list(range(500))}
    s.commit_turn()
    gd = os.path.join(s.path, "git")
    listed = git(gd, "ls-tree", "-r", "--name-only", "HEAD", "blobs").stdout.split()
    assert sorted(os.path.basename(x) for x in listed) == sorted({u.output["$blob"], s.get_node(t.id).output["$blob"]})
    assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
    store.close()
    store = SessionStore(tmp_path / "state")
    s = store.session("g")
    assert s.full_value(s.get_node(u.id).output) == big
    store.close()


def test_git_gc_on_a_session_keeps_it_working(tmp_path):
    """Running the real `git gc` (deltas, packed-refs, one pack) on a session is allowed."""
    store, s = _session(tmp_path)
    gd = os.path.join(s.path, "git")
    for i in range(40):
        s.append(Call("user" if i % 2 == 0 else "llm", "m", output=f"turn {i} " + "text " * 50,
                      predecessor=s.head_id))
        s.commit_turn()
    r = git(gd, "gc", "--aggressive", "--prune=now")
    assert r.returncode == 0, r.stderr
    store.close()
    store = SessionStore(tmp_path / "state")
    s = store.session("g")
    assert len(s.get_branch()) == 40
    for i in range(60):  # enough commits to merge small packs with the gc'd (delta) pack
        s.append(Call("user" if i % 2 == 0 else "llm", "m", output=f"more {i}", predecessor=s.head_id))
        s.commit_turn()
    assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
    store.close()
    store = SessionStore(tmp_path / "state")
    assert len(store.session("g").get_branch()) == 100
    store.close()


def test_merges_from_memory_write_what_merges_read_back_write(tmp_path):
    """A writer keeps its small unsynced packs and its open bucket's chunks in memory and merges
    them from there (store/pack_cache.py); a writer reopened before every commit
    has nothing in memory and reads everything back. The same closed bucket (but ROOT's own line:
    its creation time), fsck-clean, and a fresh store reads the same nodes from both."""
    def write(state, reopen):
        store = SessionStore(state)
        store.start_session("g", working_dir=tmp_path)
        prev = ROOT
        for i in range(FANOUT + TIER_WIDTH ** 2 + 3):  # a closed bucket, tier-0 and tier-1 merges
            if reopen:
                store.close()
                store = SessionStore(state)
            s = store.session("g")
            u = s.append(Call("user", "u", id=f"u{i:04d}", created_at=1.0 + i, output=f"q{i}", predecessor=prev))
            prev = s.append(Call("llm", "m", id=f"m{i:04d}", created_at=1.5 + i, output=f"a{i}" * 40,
                                 predecessor=u.id)).id
            s.commit_turn()
        gd = os.path.join(s.path, "git")
        store.close()
        assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
        fresh = SessionStore(state)
        nodes = [c.to_dict() for c in fresh.session("g").get_branch()]
        fresh.close()
        closed = [ln for ln in git(gd, "show", "HEAD:nodes/0000/00.jsonl").stdout.splitlines()
                  if not ln.startswith('{"id":"ROOT"')]
        return nodes, closed
    kept = write(tmp_path / "kept", reopen=False)
    read_back = write(tmp_path / "read-back", reopen=True)
    assert kept == read_back and len(kept[0]) == 2 * (FANOUT + TIER_WIDTH ** 2 + 3)
    assert len(kept[1]) == 2 * (FANOUT - 1)  # turns 1..63 (the first commit holds turn 1)


def test_two_writers_taking_turns_keep_every_pack_their_merges_need(tmp_path):
    """Two stores (as two processes) commit one session in turns of uneven length, a sync point
    (journal rotation) now and then, each merging the unsynced packs it keeps in memory without a
    stat (store/pack_cache.py) while the other merges packs away at its sync points: no merge loses
    an object or needs a pack the other removed. fsck-clean, and a fresh store reads every node."""
    state = tmp_path / "state"
    a, b = SessionStore(state), SessionStore(state)
    a.start_session("two", working_dir=tmp_path)
    sa, sb = a.session("two"), b.session("two")
    written = []
    os.environ["SESSIONDAG_JOURNAL_ROTATE_BYTES"] = "40000"  # a sync point every few dozen commits
    try:
        for k, run in enumerate([5, 3, 9, 1, 12, 2, 7, 17, 4, 8, 1, 1, 10]):
            s = sa if k % 2 == 0 else sb
            for _ in range(run):
                c = s.append(Call("user", "u", output=f"turn {len(written)} " * 20, predecessor=s.head_id))
                written.append(c.id)
                assert s.commit_turn() is not None
    finally:
        del os.environ["SESSIONDAG_JOURNAL_ROTATE_BYTES"]
    gd = os.path.join(sa.path, "git")
    a.close()
    b.close()
    assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
    fresh = SessionStore(state)
    try:
        assert [c.id for c in fresh.session("two").get_branch()] == written
    finally:
        fresh.close()


@pytest.mark.parametrize("gc_between", [False, True])
def test_big_unsynced_packs_merge_from_their_files(tmp_path, monkeypatch, gc_between):
    """Unsynced packs too big to keep in memory merge from one read of their file, with the entries
    their writer recorded (packs._kept_bytes: no index read, no stat); a `git gc` by hand in the
    middle removes them under the writer, whose next merge forgets them and reopens the repository.
    Either way: fsck-clean, every node read back by a fresh store."""
    from sessiondag.store import packs
    monkeypatch.setattr(packs, "KEPT_PACK_BYTES", 0)  # every pack "big": none kept in memory
    store, s = _session(tmp_path)
    gd = os.path.join(s.path, "git")
    written = []
    for i in range(2 * FANOUT + 5):  # tier-0 and tier-1 merges, a closed bucket
        written.append(s.append(Call("user" if i % 2 == 0 else "llm", "m", output=f"turn {i} " * 30,
                                     predecessor=s.head_id)).id)
        s.commit_turn()
        if gc_between and i == FANOUT // 2:
            r = git(gd, "gc", "--prune=now")
            assert r.returncode == 0, r.stderr
        if i == FANOUT:
            assert s.git.cache.kept and all(k[0] is None for k in s.git.cache.kept.values())
    store.close()
    assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
    fresh = SessionStore(tmp_path / "state")
    try:
        assert [c.id for c in fresh.session("g").get_branch()] == written
    finally:
        fresh.close()


@pytest.mark.parametrize("shared", [False, True])
def test_a_merge_of_kept_packs_writes_what_a_copy_record_by_record_writes(tmp_path, shared):
    """Kept packs that share no object merge as one concatenation of their bodies
    (packs._merge_kept); the pack is byte for byte the one a copy record by record writes (each
    object once), git reads every object of it, and so it is when two packs share an object."""
    from dulwich.repo import Repo

    from sessiondag.store import packs, raw_objects

    def repo(name):
        return Repo.init_bare(str(tmp_path / name), mkdir=True)
    blobs = [[raw_objects.blob(b"pack %d object %d " % (p, o) * (o + 1)) for o in range(5)] for p in range(4)]
    if shared:
        blobs[2][3] = blobs[0][1]
    merged = {}
    for how in ("concatenated", "record by record"):
        r = repo(how)
        kept: packs.Kept = {}
        names = [packs.add_pack(r.object_store, bs, 0, False, kept) for bs in blobs]
        parts = [packs._kept_bytes(base, kept[base]) for base in
                 (os.path.join(r.object_store.pack_dir, "pack-" + n.hex()) for n in names)]
        if how == "concatenated":
            name = packs._merge_kept(r.object_store, parts, 0, kept)
        else:
            out, seen = [], set()
            for buf, ents in parts:
                assert packs._copy_records(buf, ents, seen, out)
            name = packs.add_pack(r.object_store, out, 0, False).hex()
        path = os.path.join(r.object_store.pack_dir, f"pack-{name}")
        with open(path + ".pack", "rb") as f, open(path + ".idx", "rb") as g:
            merged[how] = (f.read(), g.read())
        for n in names:
            if n.hex() != name:
                os.unlink(os.path.join(r.object_store.pack_dir, f"pack-{n.hex()}.pack"))
                os.unlink(os.path.join(r.object_store.pack_dir, f"pack-{n.hex()}.idx"))
        r.close()
        listed = git(str(tmp_path / how), "verify-pack", "-v", path + ".idx").stdout
        for b in {o.id for bs in blobs for o in bs}:
            assert b.decode() in listed
    assert merged["concatenated"] == merged["record by record"]
