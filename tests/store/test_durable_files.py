"""Whole-file writes (store/durable_files.py): the old file or the new one, never a torn one, and no
temp file left — under concurrent writers, a full filesystem, a failure before the rename and a
writer killed mid-way."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading

import pytest

from sessiondag.store.durable_files import staged_file, write_file_atomic
from fault_fs import Filler, small_tmpfs


def _leftovers(d) -> list[str]:
    return [n for n in os.listdir(d) if ".tmp." in n]


def test_write_replaces_whole_with_the_asked_mode(tmp_path):
    p = str(tmp_path / "f")
    write_file_atomic(p, b"one")
    write_file_atomic(p, b"two" * 100_000)
    assert open(p, "rb").read() == b"two" * 100_000
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    write_file_atomic(p, b"x", mode=0o644, durable=False)
    assert open(p, "rb").read() == b"x" and stat.S_IMODE(os.stat(p).st_mode) == 0o644
    assert _leftovers(tmp_path) == []


def test_staged_file_hands_out_the_new_inode_and_installs_on_leaving(tmp_path):
    p = str(tmp_path / "f")
    write_file_atomic(p, b"old")
    with staged_file(p, b"new") as staged:
        assert open(p, "rb").read() == b"old"          # not in place yet
        assert os.stat(staged.tmp).st_ino == staged.inode
    assert os.stat(p).st_ino == staged.inode and open(p, "rb").read() == b"new"
    assert _leftovers(tmp_path) == []


def test_a_failure_before_the_rename_keeps_the_old_file(tmp_path):
    p = str(tmp_path / "f")
    write_file_atomic(p, b"old")
    with pytest.raises(KeyError):
        with staged_file(p, b"new"):
            raise KeyError("the caller's step between fsync and rename failed")
    assert open(p, "rb").read() == b"old" and _leftovers(tmp_path) == []


def test_threads_writing_one_file_never_tear_it(tmp_path):
    """Writers in several threads of one process (each its own temp name) and a reader: the reader
    only ever sees one writer's complete payload."""
    p = str(tmp_path / "f")
    payloads = [bytes([65 + i]) * (200_000 + i) for i in range(4)]
    write_file_atomic(p, payloads[0])
    errors, seen, stop = [], set(), threading.Event()

    def writer(i):
        try:
            for _ in range(25):
                write_file_atomic(p, payloads[i])
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    def reader():
        while not stop.is_set():
            data = open(p, "rb").read()
            if data not in payloads:
                errors.append(AssertionError(f"torn: {len(data)} bytes"))
                return
            seen.add(data[:1])

    r = threading.Thread(target=reader)
    r.start()
    ws = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    for w in ws:
        w.start()
    for w in ws:
        w.join(timeout=300)
    stop.set()
    r.join(timeout=60)
    assert not errors, errors
    assert _leftovers(tmp_path) == []


@pytest.mark.process
def test_a_full_filesystem_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    with small_tmpfs(tmp_path / "fs", "1m") as fs:
        p = os.path.join(fs, "f")
        write_file_atomic(p, b"old")
        filler = Filler(fs)
        filler.fill()
        try:
            with pytest.raises(OSError) as ei:
                write_file_atomic(p, b"n" * (256 << 10))
            assert ei.value.errno == errno.ENOSPC
            assert open(p, "rb").read() == b"old"
            assert _leftovers(fs) == []
        finally:
            filler.free()
        write_file_atomic(p, b"new")
        assert open(p, "rb").read() == b"new"


KILLED = r"""
import sys
from sessiondag.store.durable_files import write_file_atomic
p = sys.argv[1]
print("go", flush=True)
i = 0
while True:
    i += 1
    write_file_atomic(p, (b"%d;" % i) * 50_000)
"""


@pytest.mark.process
def test_a_writer_killed_mid_way_leaves_a_whole_file(tmp_path):
    p = str(tmp_path / "f")
    write_file_atomic(p, b"0;" * 50_000)
    child = subprocess.Popen([sys.executable, "-c", KILLED, p], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "go\n"
        # let it get through a few writes, then kill it wherever it is
        first = open(p, "rb").read()
        while open(p, "rb").read() == first:
            pass
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    data = open(p, "rb").read()
    parts = data.split(b";")
    assert parts[-1] == b"" and len(parts) == 50_001 and len(set(parts[:-1])) == 1
