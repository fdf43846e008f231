"""FlockMutex (store/locks.py), the lock under the session lock and the turn lock: exclusive across
real processes and threads, re-entrant within a thread, dropped when its holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from sessiondag.store.locks import FlockMutex
from sessiondag.store.presence import holders
from waiting import wait_until

CHILD = r"""
import os, sys, threading
from sessiondag.store.locks import FlockMutex
path, log, rounds, keep = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
lock = FlockMutex(path, keep_open=keep)
fd = os.open(log, os.O_WRONLY | os.O_APPEND)
def work(tag):
    for _ in range(rounds):
        with lock:
            os.write(fd, f"in {tag}\n".encode())
            with lock:  # re-entry by the holder
                os.sched_yield()
            os.write(fd, f"out {tag}\n".encode())
ts = [threading.Thread(target=work, args=(f"{os.getpid()}.{i}",)) for i in range(2)]
for t in ts: t.start()
for t in ts: t.join()
"""

HOLDER = r"""
import sys
from sessiondag.store.locks import FlockMutex
lock = FlockMutex(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
"""


def _spawn(code: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], **kw)


@pytest.mark.parametrize("keep_open", [False, True])
@pytest.mark.process
def test_critical_sections_never_overlap_across_processes_and_threads(tmp_path, keep_open):
    """Three processes of two threads each log entering and leaving the section: every `in` is
    followed by the `out` of the same thread."""
    path, log = str(tmp_path / "x.lock"), str(tmp_path / "log")
    open(log, "w").close()
    procs = [_spawn(CHILD, path, log, "150", "1" if keep_open else "0") for _ in range(3)]
    for p in procs:
        assert p.wait(timeout=300) == 0
    lines = open(log).read().splitlines()
    assert len(lines) == 3 * 2 * 150 * 2
    for a, b in zip(lines[::2], lines[1::2]):
        assert a.startswith("in ") and b == "out " + a[3:], (a, b)


def _waiters(path: str) -> set[int]:
    """Pids blocked in flock on `path` (the `->` lines of /proc/locks)."""
    st = os.stat(path)
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    with open("/proc/locks") as f:
        return {int(ln.split()[5]) for ln in f if "->" in ln and want in ln.split()}




@pytest.mark.process
def test_a_holder_in_another_process_blocks_until_it_dies(tmp_path):
    path = str(tmp_path / "x.lock")
    child = _spawn(HOLDER, path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "held\n"
        assert holders(path) == [child.pid]
        lock = FlockMutex(path)
        got = threading.Event()

        def take():
            with lock:
                got.set()

        t = threading.Thread(target=take)
        t.start()
        wait_until(lambda: os.getpid() in _waiters(path), "this process blocked in flock behind the child",
                   timeout=60, interval=0.005)  # polling /proc/locks: there is nothing to wait on
        assert not got.is_set()
        os.kill(child.pid, signal.SIGKILL)  # the kernel drops a dead holder's flock
        child.wait(timeout=30)
        assert got.wait(timeout=60)
        t.join(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_two_objects_on_one_path_exclude_each_other_in_one_process(tmp_path):
    """flock belongs to the open file description: a second FlockMutex (another store, say) in the
    same process waits like another process would, though the two share no mutex."""
    path = str(tmp_path / "x.lock")
    log: list[str] = []

    def work(tag):
        lock = FlockMutex(path)
        for _ in range(300):
            with lock:
                log.append("in " + tag)
                os.sched_yield()
                log.append("out " + tag)

    ts = [threading.Thread(target=work, args=(str(i),)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert len(log) == 3 * 300 * 2
    for a, b in zip(log[::2], log[1::2]):
        assert a.startswith("in ") and b == "out " + a[3:], (a, b)


def test_reentry_and_close_while_held(tmp_path):
    path = str(tmp_path / "x.lock")
    lock = FlockMutex(path, keep_open=True)
    fd = lock.fd
    with lock:
        with lock:
            assert lock.fd == fd
        lock.close()  # a reset under the lock: the flock goes with the descriptor
        other = FlockMutex(path)
        with other:   # free for others at once
            pass
    with lock:        # reopened on the next acquire
        assert lock.fd != -1
    lock.close()


def test_keep_open_false_closes_the_file_after_the_outermost_release(tmp_path):
    path = str(tmp_path / "x.lock")
    lock = FlockMutex(path)
    before = len(os.listdir("/proc/self/fd"))
    with lock:
        with lock:
            assert len(os.listdir("/proc/self/fd")) == before + 1
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_failed_open_leaves_the_lock_usable(tmp_path):
    path = str(tmp_path / "missing-dir" / "x.lock")
    lock = FlockMutex(path)
    with pytest.raises(FileNotFoundError):
        lock.acquire()
    os.mkdir(tmp_path / "missing-dir")
    done = threading.Event()
    t = threading.Thread(target=lambda: (lock.acquire(), lock.release(), done.set()))
    t.start()  # another thread: the failed acquire released the mutex
    assert done.wait(timeout=60)
    t.join()


@pytest.mark.process
@pytest.mark.parametrize("keep_open", [False, True])
def test_a_non_blocking_acquire_refuses_other_holders_at_once(tmp_path, keep_open):
    """acquire(blocking=False) (TurnLock.try_acquire): False while another process or another thread
    holds the lock, True again for the holding thread (re-entry) and once the lock is free; a
    refusal leaves no descriptor open and the lock usable."""
    path = str(tmp_path / "x.lock")
    lock = FlockMutex(path, keep_open=keep_open)
    child = _spawn(HOLDER, path, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    fds = len(os.listdir("/proc/self/fd"))
    try:
        assert child.stdout.readline() == "held\n"
        assert lock.acquire(blocking=False) is False        # another process
        assert len(os.listdir("/proc/self/fd")) == fds + (1 if keep_open else 0)
        child.stdin.close()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    held, go, out = threading.Event(), threading.Event(), []

    def hold():
        with lock:
            held.set()
            go.wait(60)
    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(60)
    out.append(lock.acquire(blocking=False))                 # another thread of this process
    go.set()
    t.join(60)
    assert out == [False]
    assert lock.acquire(blocking=False) is True              # free now
    assert lock.acquire(blocking=False) is True              # re-entry by the holder
    other = FlockMutex(path)
    assert other.acquire(blocking=False) is False            # a second object on the path: like a process
    lock.release()
    lock.release()
    assert other.acquire(blocking=False) is True
    other.release()
    lock.close()
