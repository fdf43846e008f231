"""Several processes write one session at once: nothing lost, seq unique and monotonic."""

import os
import subprocess

import pytest

from sessiondag.store import SessionStore
from store_helpers import child_env, git, spawn_child

WRITERS, PER_WRITER = 4, 500


@pytest.mark.parametrize("rotate", [None, 30_000], ids=["one-journal", "rotating-journal"])
@pytest.mark.process
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
    # a writer's commit is skipped (None) when another writer's commit already folded its nodes, which
    # happens more the busier the machine is; every node being in the snapshot is the invariant (above)
    assert sum(1 for line in log if " turn " in line) >= WRITERS
    store.close()


def test_threads_share_one_session(tmp_path):
    """One Session object used by several threads (as the daemon's worker threads do)."""
    import threading

    from sessiondag import Call

    store = SessionStore(tmp_path / "state")
    store.start_session("threads", working_dir=tmp_path)
    s = store.session("threads")
    errors = []

    def work(k):
        try:
            for i in range(150):
                s.append(Call("user" if i % 2 else "llm", f"t{k}", output=i, predecessor=s.head_id))
                if i % 30 == 29:
                    s.commit_turn()
                s.get_branch()
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    seqs = sorted(c.seq for c in s.graph.nodes.values())
    assert seqs == list(range(1 + 4 * 150))
    s.commit_turn()
    store.close()
    again = SessionStore(tmp_path / "state")
    assert len(again.session("threads").graph.nodes) == 1 + 4 * 150
    again.close()


def test_a_hold_that_read_the_hint_forgets_it_when_it_lets_go(tmp_path):
    """Under the lock a writer reads the hint once (journal.py `_held_hint`); once it lets the lock
    go another writer may append, and the first one's next read and write must see that record:
    two stores of one state dir (two flocks, as two processes) take turns extending one chain."""
    from sessiondag import Call
    state = tmp_path / "state"
    SessionStore(state).start_session("shared", working_dir=tmp_path)
    a, b = SessionStore(state).session("shared"), SessionStore(state).session("shared")
    head = "ROOT"
    for i in range(20):
        s = (a, b)[i % 2]
        assert s.head_id == head  # a read: has_news() after the other's write
        with s.lock:  # a hold that reads the hint (in_sync), then writes twice in it
            n = s.append(Call("user", f"u{i}", output=i, predecessor=head), expected_head=head)
            m = s.append(Call("llm", f"a{i}", output=i, predecessor=n.id), expected_head=n.id)
        head = m.id
    assert [c.output for c in a.get_branch()] == [c.output for c in b.get_branch()] == [i for i in range(20) for _ in "ua"]
