"""Checkpoint packs are written like turn commits: without fsync, after the unsynced marker
(store/snapshot_sync.py). What a power loss can take from them, the stat cache must not go on
naming: the next snapshot and a restore still hold the files' real bytes.

A power loss cannot be caused from a test (the page cache outlives every process): what it may do
to the files written without fsync is done to them by hand — packs zeroed or cut short — and the
marker and the stat cache are rewritten as the previous boot would have left them. A full tmpfs
is a real one.
"""

from __future__ import annotations

import os
import subprocess
import time

import orjson
import pytest

from sessiondag import Call
from sessiondag.core.model import ROOT
from sessiondag.runtime import checkpoints as ck
from sessiondag.store import SessionStore, checkpoints
from sessiondag.store.snapshot_sync import MARKER
from sessiondag.workspace.checkpointer import CACHE_NAME, install

pytestmark = pytest.mark.process   # git fsck, a tmpfs mount
OTHER_BOOT = "a-boot-before-the-power-loss"

import sys  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "store"))
from fault_fs import Filler, small_tmpfs  # noqa: E402


def write(path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
    past = time.time() - 10   # older than the racy window: the stat cache keeps the row
    os.utime(path, (past, past))


def turn(s, text: str) -> str:
    u = s.append(Call("user", "user", output=text, caller=ROOT, predecessor=s.head_id))
    s.append(Call("llm", "m", output="ok", caller=u.id, predecessor=u.id))
    s.commit_turn(checkpoint=True)
    return u.id


def on_disk(wd) -> dict[str, bytes]:
    out = {}
    for d, _, names in os.walk(wd):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, wd)] = open(p, "rb").read()
    return out


def stored(s, ck_id: str) -> dict[str, bytes]:
    return {p.decode(): s.git.get_blob(e.sha) for p, e in checkpoints.read(s.git, ck_id)[0].items()}


def fsck(s) -> None:
    r = subprocess.run(["git", "--git-dir", os.path.join(s.path, "git"), "fsck", "--strict", "--no-dangling"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def holds(idx: str, sha: str) -> bool:
    with open(idx, "rb") as f:
        out = subprocess.run(["git", "show-index"], stdin=f, capture_output=True, text=True, check=True).stdout
    return any(line.split()[1] == sha for line in out.splitlines())


def as_if_another_boot(s) -> list[str]:
    """The marker and the stat cache as the previous boot left them; the packs written since."""
    marker = os.path.join(s.git.git_dir, MARKER)
    st = os.stat(marker)
    m = orjson.loads(open(marker, "rb").read())
    with open(marker, "wb") as f:
        f.write(orjson.dumps({**m, "boot": OTHER_BOOT}))
    os.utime(marker, ns=(st.st_atime_ns, st.st_mtime_ns))
    cache = os.path.join(s.path, CACHE_NAME)
    lines = [orjson.loads(x) for x in open(cache, "rb").read().split(b"\n") if x]
    assert all("epoch" in x for x in lines)
    with open(cache, "wb") as f:
        f.write(b"\n".join(orjson.dumps({**x, "epoch": OTHER_BOOT}) for x in lines))
    pd = os.path.join(s.git.git_dir, "objects", "pack")
    return [os.path.join(pd, n) for n in os.listdir(pd)   # written after the marker: unsynced
            if n.endswith(".pack") and os.stat(os.path.join(pd, n)).st_mtime_ns >= st.st_mtime_ns]


def test_a_warm_snapshot_fsyncs_nothing_once_the_marker_is_there(store, workdir, monkeypatch):
    for i in range(20):
        write(workdir / f"f{i}.txt", b"%d\n" % i)
    s = store.session(store.open_session(None, working_dir=workdir).id)
    turn(s, "one")
    assert os.path.exists(os.path.join(s.git.git_dir, MARKER))
    write(workdir / "f3.txt", b"changed\n")
    n = {"n": 0}
    real = os.fsync

    def fsync(fd):
        n["n"] += 1
        return real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "fdatasync", fsync)
    with s.lock:
        ck_id, state = checkpoints.write(s.git, s.snapshots(s))
    monkeypatch.undo()
    assert n["n"] == 0 and state.hashed == 1
    assert stored(s, ck_id) == on_disk(workdir)


@pytest.mark.parametrize("damage", ["zeroed", "cut-short", "checkpoint-pack-only"])
def test_after_a_power_loss_the_next_snapshot_and_a_restore_hold_the_real_bytes(state_dir, workdir, damage):
    store = SessionStore(state_dir)
    install(store)
    for i in range(30):
        write(workdir / f"f{i:02d}.txt", b"file %d\n" % i)
    s = store.session(store.open_session(None, working_dir=workdir).id)
    sid = s.id
    turn(s, "one")
    with s.lock:
        s.git.sync()                 # a sync point: everything so far durable, the marker gone
    assert not os.path.exists(os.path.join(s.git.git_dir, MARKER))
    write(workdir / "f01.txt", b"second version\n")
    write(workdir / "new.txt", b"a new file\n")
    turn(s, "two")                   # its checkpoint's pack is unsynced: the marker is back
    sha = checkpoints.read(s.git, s.git.workspace(s.git.head()))[0][b"f01.txt"].sha
    victims = as_if_another_boot(s)
    if damage == "checkpoint-pack-only":
        victims = [p for p in victims if holds(p[:-5] + ".idx", sha)]
        assert len(victims) == 1
    store.close()
    for p in victims:
        for path in (p, p[:-5] + ".idx"):
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                if damage == "cut-short":
                    f.truncate(size // 2)
                else:
                    f.write(bytes(size))
    write(workdir / "f02.txt", b"edited after the reboot\n")   # turn two's tree is not made again
    want = on_disk(workdir)
    store = SessionStore(state_dir)
    install(store)
    try:
        s = store.session(sid)       # open finds the marker of another boot and recovers
        third = turn(s, "three")
        ck3 = s.get_node(third).metadata["checkpoint"]["id"]
        assert stored(s, ck3) == want
        fsck(s)
        write(workdir / "f01.txt", b"third version\n")
        os.unlink(workdir / "new.txt")
        ck.restore(s, third, force=True)
        assert on_disk(workdir) == want
        fsck(s)
    finally:
        store.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_snapshot_that_could_not_be_stored_leaves_the_stat_cache_naming_nothing_lost(tmp_path, workdir):
    """The state dir on a full tmpfs: the snapshot's pack cannot be written. Once there is room,
    the next snapshot stores the file it could not store before (the stat cache had not learnt it)."""
    for i in range(5):
        write(workdir / f"f{i}.txt", b"small %d\n" % i)
    with small_tmpfs(tmp_path / "fs", "4m") as fs:
        store = SessionStore(os.path.join(fs, "state"))
        install(store)
        try:
            s = store.session(store.open_session(None, working_dir=workdir).id)
            turn(s, "one")
            write(workdir / "big.bin", os.urandom(1 << 20))   # random: no compression makes it fit
            filler = Filler(fs)
            filler.fill()
            with s.lock:
                failed, why = checkpoints.take(s)
            assert failed is None and "error" in why
            filler.free()
            with s.lock:
                ck_id, summary = checkpoints.take(s)
            assert ck_id is not None, summary
            assert stored(s, ck_id) == on_disk(workdir)
        finally:
            store.close()
