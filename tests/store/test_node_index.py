"""The node index of snapshot chunks (store/node_index.py): an open that takes each node's skeleton
from the index builds the same graph as parsing every record; a session written before indexes
existed (a fixture made by the code of commit 7f7093a) opens as it did and keeps working, chunks it
rewrites get indexes, and an index that does not describe its chunk is ignored."""

import os
import tarfile

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiondag import ROOT, Call
from sessiondag.store import SessionStore
from sessiondag.store.gitstore import FANOUT
from sessiondag.store.snapshot import graph_from_snapshot
from store_helpers import git

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def view(g):
    """Everything an open rebuilds, comparable: nodes in order with their bodies and flags, the head
    state, the derived lanes and chain facts."""
    nodes = sorted(g.nodes.values(), key=lambda c: c.seq)
    return ([(c.to_dict(), c.is_spawn_root, g.is_chain_node(c)) for c in nodes], g.head_id, g.branch_names,
            g.spawn_heads, g.last_seq, list(g.usage_total), dict(g._lane), g._first_id,
            [b.to_dict() for b in g.list_branches()])


def full_parse(s):
    """The committed graph built by parsing every record (indexes ignored)."""
    head = s.git.head()
    meta, root = s.git.load_meta(head)
    return graph_from_snapshot(meta, s.git.iter_chunks(root, defer=False))


def indexed(s):
    head = s.git.head()
    meta, root = s.git.load_meta(head)
    chunks = list(s.git.iter_chunks(root))
    return graph_from_snapshot(meta, chunks), chunks


def reopen(state, sid):
    store = SessionStore(state)
    return store, store.session(sid)


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from(["chat", "tool", "update", "fork", "spawn", "commit"]),
                              st.integers(0, 10_000)), min_size=5, max_size=60))
def test_an_indexed_open_builds_the_same_graph_as_a_full_parse(tmp_path_factory, ops):
    state = tmp_path_factory.mktemp("ix") / "state"
    store = SessionStore(state)
    s = store.session(store.start_session("ix", working_dir=None).id)
    chain = []
    for op, n in ops:
        head = s.head_id
        if op == "chat" or not chain:
            c = s.append(Call("user" if len(chain) % 2 == 0 else "llm", f"c{n % 3}", output=f"o{n}",
                              predecessor=head, metadata={"n": n, "s": "é\n\"q"}))
            chain.append(c.id)
        elif op == "tool":
            s.append(Call("code", "tool", input={"n": n}, output=None, caller=chain[n % len(chain)],
                          status="running" if n % 2 else "completed"))
        elif op == "update":
            s.update(chain[n % len(chain)], output=f"u{n}", metadata={"u": n})
        elif op == "fork":
            s.append(Call("user", "fork", output="f", predecessor=chain[n % len(chain)]))
        elif op == "spawn":
            s.spawn_branch(chain[n % len(chain)], source="t", name=f"sp{n}" if n % 2 else None)
        else:
            s.commit_turn()
    for _ in range(FANOUT if len(ops) % 2 else 0):  # close a bucket now and then
        s.append(Call("user", "x", output="x", predecessor=s.head_id))
        s.commit_turn()
    s.commit_turn()
    g, chunks = indexed(s)
    assert all(ix is not None for *_, ix in chunks)
    assert view(g) == view(full_parse(s)) == view(s.graph)
    store.close()
    store, s2 = reopen(state, "ix")
    assert view(s2.graph) == view(g)
    store.close()


@pytest.mark.process
def test_a_session_written_before_indexes_opens_and_goes_on(tmp_path):
    state = tmp_path / "state"
    os.makedirs(state / "sessions")
    with tarfile.open(os.path.join(FIXTURES, "pre_index_session.tar.gz")) as tf:
        tf.extractall(state / "sessions")
    with open(os.path.join(FIXTURES, "pre_index_session.json"), "rb") as f:
        expect = orjson.loads(f.read())
    store, s = reopen(state, "pre-index")
    gd = os.path.join(s.path, "git")
    assert git(gd, "ls-tree", "--name-only", "HEAD", "index").stdout == ""  # no index in the old format
    g = s.graph
    assert [c.to_dict() for c in sorted(g.nodes.values(), key=lambda c: c.seq)] == expect["nodes"]
    assert (g.head_id, g.branch_names, g.spawn_heads, s.turn) == (
        expect["head_id"], expect["branch_names"], expect["spawn_heads"], expect["turn"])
    before = view(g)
    # the new code goes on writing it: new chunks get indexes, the old ones are read as before,
    # and closing the half-full bucket rewrites it with an index
    head = g.head_id
    for t in range(FANOUT):
        head = s.append(Call("user" if t % 2 == 0 else "llm", "new", output=f"new {t}", predecessor=head)).id
        if t == 5:
            s.update(expect["nodes"][3]["id"], metadata={"late": True})
        s.commit_turn()
    ix = git(gd, "ls-tree", "-r", "--name-only", "HEAD", "index").stdout.split()
    nodes = git(gd, "ls-tree", "-r", "--name-only", "HEAD", "nodes").stdout.split()
    assert "index/0000/02.json" in ix and "nodes/0000/02.jsonl" in nodes  # the bucket closed with an index
    assert not any(f.startswith("index/0000/00") or f.startswith("index/0000/01") for f in ix)
    assert all("index/" + f[len("nodes/"):-1] in ix for f in nodes if f >= "nodes/0000/02")
    assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
    after = view(s.graph)
    store.close()
    store, s = reopen(state, "pre-index")
    assert view(s.graph) == after == view(full_parse(s))
    assert after[0][:len(before[0])] != before[0]  # (the late update changed an old node)
    store.close()


def test_an_index_that_does_not_describe_its_chunk_is_ignored(tmp_path):
    """A chunk rewritten by code that knows no index (or damage) leaves a stale index: the open
    parses that chunk whole instead of trusting the index."""
    from sessiondag.store import node_index
    a = Call("user", "a", output="one", predecessor=ROOT, seq=1, created_at=1.0).to_dict()
    b = Call("llm", "b", output="two", predecessor=a["id"], seq=2, created_at=2.0).to_dict()
    good = node_index.build(orjson.dumps(a) + b"\n" + orjson.dumps(b) + b"\n", b"1" * 40)
    assert node_index.rows_for(good, b"1" * 40) is not None
    for index in (good, b"not json", b'{"chunk": 1}', None):
        assert node_index.rows_for(index, b"2" * 40) is None


def _committed(state, sid, turns, per_turn=3):
    store = SessionStore(state)
    s = store.session(store.start_session(sid, working_dir=None).id)
    head = ROOT
    for t in range(turns):
        for i in range(per_turn):
            head = s.append(Call("user" if i % 2 == 0 else "llm", "m", output=f"t{t} n{i} " + "w" * 200,
                                 predecessor=head, metadata={"t": t})).id
        s.commit_turn()
    want = {c.id: c.to_dict() for c in s.graph.nodes.values()}
    store.close()
    return want


@pytest.mark.process
def test_deferred_bodies_read_after_another_process_merged_the_packs_away(tmp_path):
    from sessiondag.store import node_index
    import subprocess
    import sys
    state = tmp_path / "state"
    want = _committed(state, "merge", 40)
    store, s = reopen(state, "merge")
    g = s.graph
    assert all(isinstance(c._raw, node_index.DeferredChunk) for c in g.nodes.values() if c.id != ROOT)
    packdir = os.path.join(s.path, "git", "objects", "pack")
    packs_before = set(os.listdir(packdir))
    child = (
        "import sys\n"
        "from sessiondag import Call\n"
        "from sessiondag.store import SessionStore\n"
        "s = SessionStore(sys.argv[1]).session('merge')\n"
        "for t in range(120):\n"
        "    s.append(Call('user', 'x', output='x' * 300, predecessor=s.head_id))\n"
        "    s.commit_turn()\n")
    # old packs merge at a sync point (store/snapshot_sync.py): the child's journal rotates
    subprocess.run([sys.executable, "-c", child, str(state)], check=True,
                   env=dict(os.environ, SESSIONDAG_JOURNAL_ROTATE_BYTES="8000"))
    assert packs_before - set(os.listdir(packdir)), "the other process merged no pack away"
    for nid, d in want.items():  # bodies left in storage at open: read from the merged packs
        assert g.nodes[nid].to_dict() == d
    store.close()


def test_a_deferred_body_of_a_deleted_session_is_a_typed_error(tmp_path):
    import shutil
    from sessiondag.core.errors import SessionDagError
    state = tmp_path / "state"
    want = _committed(state, "del", 3)
    store, s = reopen(state, "del")
    nodes = s.get_branch()
    shutil.rmtree(s.path)
    try:
        nodes[-1].output
    except SessionDagError as e:  # the session was deleted (its directory is gone): not damage
        assert e.code == "session_deleted" and e.session_id == "del", e
    else:
        raise AssertionError("a body of a deleted session was read from nowhere")
    assert nodes[0].id in want
    store.close()


def _chunk_shas(g):
    from sessiondag.store import node_index
    return list(dict.fromkeys(c._raw.sha for c in g.nodes.values() if isinstance(c._raw, node_index.DeferredChunk)))


@pytest.mark.parametrize("repack", [None, "level9", pytest.param("gc", marks=pytest.mark.process)])  # gc: git
def test_bodies_read_from_the_packs_are_those_dulwich_reads(tmp_path, repack):
    """A deferred chunk read straight from its pack (node_index.whole_blob: one inflate into a
    buffer of its size) is the blob dulwich reads; a chunk it does not take as such — a delta after
    `git gc`, a pack written at another zlib level — still reads (as dulwich reads it)."""
    from dulwich.repo import Repo
    from sessiondag.store import node_index
    state = tmp_path / "state"
    env = {"SESSIONDAG_PACK_COMPRESSION": "9"} if repack == "level9" else {}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        want = _committed(state, "packs", 30)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    store, s = reopen(state, "packs")
    git_dir = os.path.join(s.path, "git")
    if repack == "gc":
        store.close()
        r = git(git_dir, "gc", "--aggressive", "--prune=now")
        assert r.returncode == 0, r.stderr
        store, s = reopen(state, "packs")
    g = s.graph
    shas = _chunk_shas(g)
    assert shas
    repo = Repo(git_dir)
    maps = {}
    try:
        packs = list(repo.object_store.packs)
        taken = 0
        for sha in shas:
            got = node_index.whole_blob(packs, sha, maps)
            if got is not None:
                taken += 1
                assert got == repo.object_store.get_raw(sha)[1]
        if repack is None or repack == "level9":
            assert taken == len(shas)  # stored whole: every chunk takes the direct read
    finally:
        for m in maps.values():
            if m is not None:
                m.close()
        repo.close()
    for nid, d in want.items():
        assert g.nodes[nid].to_dict() == d
    store.close()


@pytest.mark.parametrize("in_order", [False, True, "render"])
def test_a_damaged_chunk_in_a_pack_is_corrupt_not_other_bytes(tmp_path, in_order):
    """A byte flipped inside a chunk's stored zlib stream: the direct read declines it (zlib's
    checksum), dulwich's read fails too, and the body read is a typed `corrupt` error (it used to
    be a BufferError: the Repo was closed while the failed read's traceback held its mapping).
    `in_order`: the chunks before it read in order first, so the reader's thread tries the
    damaged one ahead (and fails): the node's own read still hears why. `render`: a render reads
    the chunks where they lie (DeferredChunk.view), the damaged one too: the render is `corrupt`."""
    from sessiondag.core.errors import SessionDagError
    from sessiondag.store import node_index
    state = tmp_path / "state"
    _committed(state, "dmg", 4)
    store, s = reopen(state, "dmg")
    g = s.graph
    sha = _chunk_shas(g)[-1]
    victim = next(c for c in g.nodes.values() if isinstance(c._raw, node_index.DeferredChunk) and c._raw.sha == sha)
    packdir = os.path.join(s.path, "git", "objects", "pack")
    line = victim.to_json()[:40]  # a stretch of the chunk as stored (level 0: the bytes themselves)
    hit = 0
    for name in os.listdir(packdir):
        if name.endswith(".pack"):
            p = os.path.join(packdir, name)
            data = bytearray(open(p, "rb").read())
            at = data.find(line)
            if at >= 0:
                data[at + 20] ^= 0x01
                open(p, "wb").write(bytes(data))
                hit += 1
    assert hit, "the chunk's bytes were not found stored in a pack"
    store.close()
    store, s = reopen(state, "dmg")
    if in_order == "render":
        from sessiondag.context.renderer import FAST
        with pytest.raises(SessionDagError) as e:
            FAST.encoded(s)
        assert e.value.code == "corrupt", e.value
    elif in_order:
        before = [c for c in s.get_branch() if not (isinstance(c._raw, node_index.DeferredChunk) and c._raw.sha == sha)]
        assert [c.to_dict()["id"] for c in before] == [c.id for c in before]  # read, in order
        assert s.git.bodies.settle(60)
    try:
        s.graph.nodes[victim.id].output
    except SessionDagError as e:
        assert e.code == "corrupt", e
    else:
        raise AssertionError("a damaged chunk was read as a body")
    store.close()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=6).map(lambda b: b.replace(b"\n", b"")), max_size=8), st.booleans())
def test_line_starts_are_where_the_lines_of_a_chunk_lie(lines, last_newline):
    """node_index.line_starts (a render slicing a chunk's lines where they lie) finds the lines
    `DeferredChunk._fill` splits, and a chunk with another number of lines than its index is
    corrupt for it too."""
    from sessiondag.store import node_index
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    split = data.split(b"\n")
    if split and not split[-1]:
        split.pop()
    starts = node_index.line_starts(data, len(split), b"00")
    assert [data[starts[i]:starts[i + 1] - 1] for i in range(len(split))] == split
    for n in (len(split) - 1, len(split) + 1):
        if n >= 0:
            with pytest.raises(node_index.CorruptSnapshotError):
                node_index.line_starts(data, n, b"00")
