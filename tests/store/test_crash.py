"""SIGKILL a writer at random moments; every acknowledged node must survive, git must stay clean."""

import os
import random
import signal
import time

import pytest

from sessiondag import Call
from sessiondag.store import SessionStore
from store_helpers import child_env, git, spawn_child

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)

ROUNDS = 200 if os.environ.get("SESSIONDAG_SLOW") == "1" else 50


def check_session(state, sid, acked):
    store = SessionStore(state)
    try:
        s = store.session(sid)
        g = s.graph
        missing = [i for i in acked if i not in g.nodes]
        assert not missing, f"{len(missing)} acknowledged node(s) lost, e.g. {missing[:3]}"
        seqs = sorted(c.seq for c in g.nodes.values())
        assert seqs == list(range(len(seqs))), "seq must be unique and gapless from ROOT=0"
        assert g.get_branch()  # the head chain walks cleanly
        return s.path, len(g.nodes)
    finally:
        store.close()


def assert_git_clean(path):
    gd = os.path.join(path, "git")
    r = git(gd, "fsck", "--strict", "--no-dangling")
    assert r.returncode == 0 and "error" not in r.stderr.lower(), r.stdout + r.stderr
    if git(gd, "rev-parse", "--verify", "-q", "refs/heads/main").returncode == 0:
        r = git(gd, "log", "--oneline")
        assert r.returncode == 0, r.stderr


def test_sigkill_at_random_moments(tmp_path):
    state = tmp_path / "state"
    SessionStore(state).start_session("crashy", working_dir=tmp_path)
    env = child_env(state, SESSIONDAG_JOURNAL_ROTATE_BYTES=20_000, SESSIONDAG_NODE_SPILL=2000)
    rng = random.Random(1234)
    acked: list[str] = []
    total = 0
    for rnd in range(ROUNDS):
        p = spawn_child("crash", state, "crashy", rng.randrange(1 << 30), env=env)
        assert p.stdout.readline() == "ready\n"
        want = rng.randrange(0, 40)
        for _ in range(want):  # let it acknowledge a random number of appends first
            line = p.stdout.readline()
            assert line, "child died on its own"
            acked.append(line.strip())
        if rng.random() < 0.5:
            time.sleep(rng.random() * 0.004)  # shift the kill to a random point inside an operation
        p.send_signal(signal.SIGKILL)
        rest = p.stdout.read()
        p.wait()
        p.stdout.close()
        assert p.returncode == -signal.SIGKILL
        acked.extend(l for l in rest.split("\n") if len(l) == 24)
        path, total = check_session(state, "crashy", acked)
        if rnd % 5 == 0 or rnd == ROUNDS - 1:
            assert_git_clean(path)
    assert total >= len(acked) > ROUNDS
    log = git(os.path.join(path, "git"), "log", "--format=%s")
    assert log.returncode == 0 and log.stdout.count("turn ") >= 10


def test_recovers_from_stale_ref_lock_and_torn_journal_tail(tmp_path):
    state = tmp_path / "state"
    store = SessionStore(state)
    store.start_session("torn", working_dir=tmp_path)
    s = store.session("torn")
    a = s.append(Call("user", "u", output="hi", predecessor="ROOT"))
    s.commit_turn()
    b = s.append(Call("llm", "m", output="yo", predecessor=a.id))
    store.close()
    gd = os.path.join(s.path, "git")
    # what a writer killed inside a ref update and inside a journal write leaves behind
    with open(os.path.join(gd, "refs", "heads", "main.lock"), "w") as f:
        f.write("0" * 40 + "\n")
    jpath = os.path.join(s.path, "journal.log")
    with open(jpath, "rb") as f:
        log = f.read()
    end = log.index(b"\0")  # the log's logical end: zero padding follows
    with open(jpath, "r+b") as f:
        f.seek(end)
        f.write(b'{"a":{"id":"torn-half-rec')    # a write cut short by SIGKILL
        f.seek(end + 3000)
        f.write(b'{"stray":"after a hole"}\n')  # what a power loss may leave past a hole
    store = SessionStore(state)
    s = store.session("torn")
    assert [c.id for c in s.get_branch()] == [a.id, b.id]
    c = s.append(Call("user", "u2", output="again", predecessor=b.id))
    assert s.commit_turn()
    store.close()
    with open(jpath, "rb") as f:
        log = f.read()
    assert b"torn-half-rec" not in log and b"stray" not in log
    assert not os.path.exists(os.path.join(gd, "refs", "heads", "main.lock"))
    assert_git_clean(s.path)
    store = SessionStore(state)
    assert [x.id for x in store.session("torn").get_branch()] == [a.id, b.id, c.id]
    store.close()


def test_kill_holding_the_lock_does_not_block_others(tmp_path):
    """flock dies with its holder: a writer SIGKILLed mid-stream never leaves the session stuck."""
    state = tmp_path / "state"
    SessionStore(state).start_session("locky", working_dir=tmp_path)
    p = spawn_child("crash", state, "locky", 7, env=child_env(state))
    assert p.stdout.readline() == "ready\n"
    acked = [p.stdout.readline().strip() for _ in range(5)]
    p.send_signal(signal.SIGKILL)
    p.wait()
    p.stdout.close()
    store = SessionStore(state)
    s = store.session("locky")
    assert set(acked) <= set(s.graph.nodes)
    s.append(Call("user", "after", predecessor=s.head_id))
    assert s.commit_turn()
    store.close()
