"""The snapshot before a session's first turn (runtime/baseline.py) runs in a thread of its own while
the turn goes on, so its walk races whatever changes the working dir meanwhile. It opens nothing
itself: the walk is the workspace snapshotter's, through workspace/beneath.py (directories opened
with O_NOFOLLOW from the root down). Here a directory is swapped for a symlink to a directory
outside, over and over, while baselines are taken: no snapshot ever holds what is outside.
(runtime/before_call.py opens no path at all: it reads recorded blobs from the session's git.)"""

import os
import threading
import time

from dulwich.objects import Blob

from sessiondag.core.checkpoint import BASELINE_KEY
from sessiondag.runtime.baseline import Baseline
from sessiondag.store import SessionStore, checkpoints
from sessiondag.workspace.checkpointer import install

SECRET = b"outside the working dir: never snapshot this\n"
N = 60


def test_a_symlink_swapped_in_during_a_baseline_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    wd = tmp_path / "work"
    (wd / "sub").mkdir(parents=True)
    for i in range(N):   # enough files that a walk takes a while
        (outside / f"f{i}.txt").write_bytes(SECRET + str(i).encode())
        (wd / "sub" / f"f{i}.txt").write_bytes(b"inside %d\n" % i)
    secrets = {Blob.from_string(SECRET + str(i).encode()).id for i in range(150)}
    store = SessionStore(tmp_path / "state")
    install(store)
    stop, swaps = threading.Event(), [0]

    def swapper():
        sub, real = str(wd / "sub"), str(wd / "sub.real")
        while not stop.is_set():
            os.rename(sub, real)
            os.symlink(str(outside), sub)
            swaps[0] += 1
            time.sleep(0)   # let the walk run between swaps
            os.unlink(sub)
            os.rename(real, sub)
    t = threading.Thread(target=swapper, daemon=True)
    t.start()
    sessions = []
    try:
        for _ in range(6):
            s = store.session(store.open_session(None, working_dir=str(wd)).id)
            b = Baseline.start(s)
            assert b is not None
            b.settle()
            sessions.append(s)
    finally:
        stop.set()
        t.join()
    assert swaps[0] > 6          # the swaps did run during the baselines
    taken = 0
    for s in sessions:
        objects = s.git.repo.object_store
        assert not any(sha in objects for sha in secrets), s.id
        meta = s.graph.extra.get(BASELINE_KEY)
        if meta:   # a walk that met the symlink may record a partial snapshot; none holds the outside
            taken += 1
            entries, _ = checkpoints.read(s.git, meta["id"])
            assert all(e.sha.encode() not in secrets for e in entries.values())
    assert taken > 0
    store.close()
