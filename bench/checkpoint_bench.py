"""Workspace checkpoints (docs/checkpoints.md) against git, side by side in one run.

A workspace of 10,000 files / 200 MB (`--quick`: 1,000 / 20 MB; mtimes set 10 s back, so git's and
our racy-clean rules do not force rehashes): the first snapshot into an empty session repository vs
`git add -A && git write-tree` on a copy with a fresh index; warm snapshots with 1 and 100 changed
files — walking the tree (stat cache) and from the daemon's real watcher (dirty paths + barrier) —
vs `git add -A && git write-tree` with a warm index; a restore of 100 changed files; the session
repository's growth per turn with nothing changed and with one 10 KB file changed; a turn commit
with and without its snapshot (the part the turn's critical path pays); a first turn's wait for
its first model request with the first snapshot beside it and before it. Peers' published figures
(issue 20) are printed beside ours; they were measured elsewhere, on other machines.
The walking rows are also taken with the directory listings not reused (workspace/listings.py
off: every directory read again, the walk before it), alternating in the same loop.
`--warm-only`: the first snapshot and the warm 1-change rows alone (a before/after of one change).
A first snapshot cut short by its time budget is finished by further snapshots before the warm rows
(their walks would otherwise still hash what it left).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import anyio

from sessiondag.core.model import ROOT, Call
from sessiondag.runtime import checkpoints as ck
from sessiondag.store import SessionStore
from sessiondag.store import checkpoints as store_ck, repo_size
from sessiondag.workspace.binding import WorkspaceBinding
from sessiondag.workspace.checkpointer import install

PEERS = [
    ("Cline (shadow git per tool use)", "20-90 s per turn on big trees; off at 50k files; packs of hundreds of GB"),
    ("OpenCode (git dir per step)", "66 s first init on a large repo; snapshot dirs of 98-170 GB"),
    ("another agent, 10,200-file repo", "4.5-4.8 s first snapshot (80% of the time before the first request)"),
    ("Claude Code", "edit-tool changes only (shell and external edits not tracked)"),
]


def build(root: str, files: int, total: int) -> None:
    size = total // files
    past = time.time() - 10
    for i in range(files):
        d = os.path.join(root, f"d{i % 50:02d}", f"s{i // 50 % 20:02d}")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"f{i:05d}.txt")
        with open(p, "wb") as f:
            f.write(os.urandom(size // 2).hex().encode()[:size])
        os.utime(p, (past, past))
    with open(os.path.join(root, ".gitignore"), "w") as f:
        f.write("*.log\nbuild/\n")


def paths(root: str) -> list[str]:
    out = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x != ".git")
        out += [os.path.join(d, n) for n in sorted(names) if n.endswith(".txt")]
    return out


def change(files: list[str], n: int, tag: str) -> None:
    for p in files[:n]:
        with open(p, "ab") as f:
            f.write(tag.encode())


def timed(fn, *a):
    t = time.perf_counter()
    r = fn(*a)
    return time.perf_counter() - t, r


def git(cwd: str, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def git_snapshot(cwd: str) -> float:
    t = time.perf_counter()
    git(cwd, "add", "-A")
    git(cwd, "write-tree")
    return time.perf_counter() - t


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:8.1f} ms"


class Watch:
    """The daemon's working-dir watcher (workspace/binding.py) on a thread of its own."""

    def __init__(self, wd: str, barrier_dir: str, snaps, sid: str):
        self.b = WorkspaceBinding(self._noop, self._noop, self._noop)
        self.b.barrier.dir = barrier_dir
        self.b.on_dirty, self.b.on_watching = snaps.mark_dirty, snaps.on_watching
        snaps.barrier = self.b.barrier.wait
        self.wd, self.sid = wd, sid
        self.ready = threading.Event()
        self.t = threading.Thread(target=lambda: anyio.run(self._main), daemon=True)
        self.t.start()
        self.ready.wait(30)

    @staticmethod
    async def _noop(*a):
        return None

    async def _main(self):
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.b.run)
            self.b.add(self.sid, self.wd)
            await self.b.wait_watching(self.sid)
            self.ready.set()
            while not self.b.tree._closed:
                await anyio.sleep(0.05)
            tg.cancel_scope.cancel()

    def close(self):
        self.b.close()
        self.t.join(10)


def turn(s, text: str, checkpoint: bool = True) -> float:
    """One turn's nodes and its commit; the commit's seconds."""
    u = s.append(Call("user", "user", output=text, caller=ROOT, predecessor=s.head_id))
    s.append(Call("llm", "m", output="ok", caller=u.id, predecessor=u.id))
    snaps = s.snapshots
    t = time.perf_counter()
    if checkpoint and snaps is not None:
        snaps.sync(s)
    s.commit_turn(checkpoint=checkpoint)
    return time.perf_counter() - t


def first_request(state: str, wd: str, baseline_first: bool) -> float:
    """Seconds from the start of a new session's first turn to its first model request (a cold
    stat cache: the first snapshot reads every file)."""
    from sessiondag.core.checkpoint import BASELINE_KEY
    from sessiondag.runtime import Runtime, run_task
    from sessiondag.runtime.providers.scripted import ScriptedProvider
    seen: list[float] = []

    class Timed(ScriptedProvider):
        def complete(self, *a, **kw):
            seen.append(time.perf_counter())
            return super().complete(*a, **kw)
    st = SessionStore(state)
    install(st)
    try:
        sid = st.open_session(None, working_dir=wd).id
        t0 = time.perf_counter()
        if baseline_first:
            s = st.session(sid)
            with s.lock:
                s.record_checkpoint(BASELINE_KEY)
        run_task("hello", session_id=sid, store=st, runtime=Runtime(Timed([{"text": "ok"}])))
        return seen[0] - t0
    finally:
        st.close()


def main(flags: list[str]) -> None:
    quick = "--quick" in flags
    files, total = (1000, 20 << 20) if quick else (10_000, 200 << 20)
    reps = 5 if quick else 15
    tmp = tempfile.mkdtemp(prefix="ckbench-")
    try:
        run(tmp, files, total, reps, warm_only="--warm-only" in flags)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: str, files: int, total: int, reps: int, warm_only: bool = False) -> None:
    """Every row; `warm_only` (--warm-only): the first snapshot and the warm 1-change rows alone."""
    wd, copy, state = os.path.join(tmp, "work"), os.path.join(tmp, "copy"), os.path.join(tmp, "state")
    os.makedirs(wd)
    build(wd, files, total)
    shutil.copytree(wd, copy, symlinks=True)
    git(copy, "init", "-q")
    print(f"workspace: {files} files, {total >> 20} MB; machine: {os.cpu_count()} cores, shared (loaded)")
    rows = []
    g_first = git_snapshot(copy)
    store = SessionStore(state)
    snaps = install(store)
    s = store.session(store.open_session(None, working_dir=wd).id)
    taker = snaps(s)
    with s.lock:
        t_first, (ck0, st0) = timed(store_ck.write, s.git, taker, 0)
    rows.append(("first snapshot", ms(t_first), ms(g_first), f"{st0.new_bytes >> 20} MB stored" +
                 (f", partial ({st0.partial})" if st0.partial else "")))
    done, tries = st0, 0
    while done.partial and tries < 20:   # warm means the cache holds every file: finish what the budget cut
        with s.lock:
            ck0, done = store_ck.write(s.git, taker, 0)
        tries += 1
    with s.lock:
        s.record_checkpoint("checkpoints.baseline", taken=(ck0, {"id": ck0}))
    lst, lst_c = paths(wd), paths(copy)
    for n in (1,) if warm_only else (1, 100):
        walk, unlisted, dirty, g = [], [], [], []
        for r in range(reps):
            change(lst, n, f"u{n}.{r}")      # the walk as it was: every directory read again
            reuse, taker.reuse_listings = taker.reuse_listings, False
            with s.lock:
                unlisted.append(timed(store_ck.write, s.git, taker, 0)[0])
            taker.reuse_listings = reuse     # as the file system allows (workspace/mounts.py)
            change(lst, n, f"w{n}.{r}")
            with s.lock:
                walk.append(timed(store_ck.write, s.git, taker, 0)[0])
            change(lst_c, n, f"w{n}.{r}")
            g.append(git_snapshot(copy))
        os.makedirs(os.path.join(state, "barrier"), exist_ok=True)
        watch = Watch(wd, os.path.join(state, "barrier"), snaps, s.id)
        try:
            with s.lock:
                store_ck.write(s.git, taker, 0)   # the walk after the watch started: dirty marks count from here
            for r in range(reps):
                change(lst, n, f"d{n}.{r}")
                t = time.perf_counter()
                taker.sync()
                with s.lock:
                    _, state_ = store_ck.write(s.git, taker, 0)
                dirty.append(time.perf_counter() - t)
                assert state_.mode == "dirty", state_.mode
        finally:
            watch.close()
            snaps.on_watching(frozenset())
        rows.append((f"warm, {n} changed (walk) p50/p95", f"{ms(statistics.median(walk))} / {ms(p95(walk))}",
                     f"{ms(statistics.median(g))} / {ms(p95(g))}",
                     f"{statistics.median(walk) / statistics.median(g):.2f}x git (p50); listings reused"))
        rows.append((f"warm, {n} changed (walk, no listing reuse)",
                     f"{ms(statistics.median(unlisted))} / {ms(p95(unlisted))}", "",
                     f"{statistics.median(unlisted) / statistics.median(g):.2f}x git (p50); every directory read: "
                     "the walk before"))
        rows.append((f"warm, {n} changed (watcher) p50/p95", f"{ms(statistics.median(dirty))} / {ms(p95(dirty))}",
                     "", "includes the barrier round trip"))
    if warm_only:
        store.close()
        return show(rows)
    # a restore of 100 changed files
    with s.lock:
        turn(s, "before")
        before = s.head_id
        change(lst, 100, "restore-me")
        turn(s, "after")
        t_restore, _ = timed(ck.restore, s, before)
    rows.append(("restore of 100 changed files", ms(t_restore), "", "undo point + writes + the snapshot after"))
    # repository growth per turn (averaged over 10 turns each: pack merges make single turns noisy)
    def growth(n: int, checkpoint: bool, edit=None) -> float:
        with s.lock:
            before = repo_size.repo_bytes(s.git.git_dir)
            for i in range(n):
                if edit:
                    edit(i)
                turn(s, f"growth {i}", checkpoint=checkpoint)
            return (repo_size.repo_bytes(s.git.git_dir) - before) / n

    def ten_kb(i: int) -> None:
        with open(lst[0], "wb") as f:
            f.write(os.urandom(5 << 10).hex().encode())
    plain = growth(10, False)
    same = growth(10, True)
    one = growth(10, True, ten_kb)
    rows.append(("repo growth/turn, nothing changed", f"{same:.0f} B", "",
                 f"without a snapshot: {plain:.0f} B (the snapshot's part: {same - plain:.0f} B; goal <= 1 KB)"))
    rows.append(("repo growth/turn, one 10 KB file changed", f"{one:.0f} B", "",
                 f"the snapshot's part: {one - plain:.0f} B (goal <= 15 KB; random hex: compresses ~2x)"))
    # the turn's critical path: commit with and without the snapshot (watcher on, 1 file changed)
    watch = Watch(wd, os.path.join(state, "barrier"), snaps, s.id)
    try:
        with s.lock:
            store_ck.write(s.git, taker, 0)
        with_ck, without = [], []
        for r in range(reps):
            change(lst, 1, f"c{r}")
            with_ck.append(turn(s, f"c{r}"))
            change(lst, 1, f"n{r}")
            without.append(turn(s, f"n{r}", checkpoint=False))
    finally:
        watch.close()
    rows.append(("turn commit with / without snapshot p50", f"{ms(statistics.median(with_ck))}",
                 f"{ms(statistics.median(without))}", "1 file changed, watcher on (second column: no snapshot)"))
    store.close()
    # a session's first turn: how long until its first model request, the snapshot before the
    # first turn beside the turn (runtime/baseline.py) vs before it (the order until now)
    beside, before = first_request(state + "-beside", wd, False), first_request(state + "-before", wd, True)
    rows.append(("first turn: until the first model request", ms(beside), "",
                 f"the first snapshot beside the turn; before it (the old order): {ms(before).strip()}"))
    show(rows)


def show(rows: list[tuple[str, str, str, str]]) -> None:
    w = max(len(r[0]) for r in rows)
    print(f"{'':<{w}}  {'sessiondag':>21}  {'git add -A && write-tree':>24}  note")
    for name, ours, theirs, note in rows:
        print(f"{name:<{w}}  {ours:>21}  {theirs:>24}  {note}")
    print("\npeers' published figures (issue 20; other machines, other repositories):")
    for who, what in PEERS:
        print(f"  {who:<36} {what}")


if __name__ == "__main__":
    main(sys.argv[1:])
