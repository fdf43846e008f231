"""Several processes write one session at once: nothing lost, seq unique and monotonic."""

import os
import subprocess

import pytest

from sessiondag.store import SessionStore
from store_helpers import child_env, git, spawn_child

WRITERS, PER_WRITER = 4, 500


@pytest.mark.parametrize("rotate", [None, 30_000], ids=["one-journal", "rotating-journal"])
def test_four_writers_five_hundred_appends_each(tmp_path, rotate):
    state = tmp_path / "state"
    SessionStore(state).start_session("shared", working_dir=tmp_path)
    env = child_env(state, **({"SESSIONDAG_JOURNAL_ROTATE_BYTES": rotate} if rotate else {}))
    procs = [spawn_child("writer", state, "shared", PER_WRITER, f"w{k}", env=env, stdin=subprocess.PIPE)
             for k in range(WRITERS)]
    foreign = []
    for p in procs:
        word, n, seen = p.stdout.readline().split()
        assert (word, int(n)) == ("done", PER_WRITER)
        foreign.append(int(seen))
    # all writers are done: each process's in-memory view must now show every other's writes
    finals = []
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
        finals.append(p.stdout.readline().split())
        p.stdin.close()
        assert p.wait() == 0
        p.stdout.close()
    total = 1 + WRITERS * PER_WRITER
    assert all(f[0] == "final" and int(f[1]) == total and int(f[3]) == total - 1 for f in finals), finals
    assert len({f[2] for f in finals}) == 1, "the writers disagree about the node set"
    assert sum(foreign) > 0, "the writers never interleaved; the test did not test concurrency"

    store = SessionStore(state)
    s = store.session("shared")
    g = s.graph
    assert len(g.nodes) == total
    seqs = [c.seq for c in sorted(g.nodes.values(), key=lambda c: c.seq)]
    assert seqs == list(range(total))
    by_writer = {}
    for c in sorted(g.nodes.values(), key=lambda c: c.seq):
        if c.id != "ROOT":
            by_writer.setdefault(c.name, []).append(c.output)
    for k in range(WRITERS):  # each writer's own appends keep their order
        assert by_writer[f"w{k}"] == [f"w{k}-{i}" for i in range(PER_WRITER)]
    assert s.commit_turn() is None  # everything is already folded into git
    # the latest git snapshot on its own holds every node
    meta, nodes = s.git.load(s.git.head())
    assert sorted(d["id"] for d in nodes) == sorted(g.nodes) and meta["last_seq"] == total - 1
    gd = os.path.join(s.path, "git")
    assert git(gd, "fsck", "--strict", "--no-dangling").returncode == 0
    log = git(gd, "log", "--format=%s").stdout.splitlines()
    assert sum(1 for line in log if " turn " in line) >= WRITERS * (PER_WRITER // 50) - WRITERS
    store.close()
