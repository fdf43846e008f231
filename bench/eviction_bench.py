"""What closing idle sessions costs: a request on a loaded session vs one that must load it again.

A daemon with `--max-open-sessions 1` serves two sessions alternately, so every request reopens its
session (journal, snapshot, graph); a daemon with the default limit serves them warm. Sessions of
10, 1,000 and 10,000 nodes (committed: the reopen reads the snapshot, not a long journal).

    python bench/eviction_bench.py [--quick]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import anyio

from sessiondag import Call
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

SERVE = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "serve"]


def make_sessions(state: str, work: str, n: int) -> None:
    store = SessionStore(state)
    for sid in ("a", "b"):
        store.start_session(sid, working_dir=work)
        s = store.session(sid)
        u = s.append(Call("user", "me", output="start", predecessor="ROOT"))
        s.append_many([Call("code", f"n{i}", output="x" * 200, caller=u.id) for i in range(n - 1)])
        s.commit_turn()
    store.close()


def start(state: str, *extra: str) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen(SERVE + ["--socket", "--state-dir", state, *extra], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for raw in p.stderr:
        line = raw.decode()
        if line.startswith("sessiondag: ready"):
            return p, dict(t.split("=", 1) for t in line.split()[2:] if "=" in t)["socket"]
    raise RuntimeError("daemon did not start")


async def measure(sock: str, reps: int) -> tuple[float, float]:
    async with await connect_unix(sock) as c:
        for sid in ("a", "b"):
            await c.get_node(sid, "ROOT")
        times = []
        for i in range(reps):
            sid = "ab"[i % 2]
            t = time.perf_counter()
            await c.get_node(sid, "ROOT")
            times.append(time.perf_counter() - t)
        st = await c.status()
        assert st["evictions"]["lru"] >= (reps - 2 if st["limits"]["max_open_sessions"] == 1 else 0)
    times.sort()
    return statistics.median(times) * 1e3, times[int(len(times) * 0.9)] * 1e3


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    sizes = [10, 1000] if quick else [10, 1000, 10000]
    reps = 20 if quick else 60
    print(f"{'nodes per session':>18} {'warm p50 ms':>12} {'warm p90':>9} {'reopen p50 ms':>14} {'reopen p90':>11} {'ratio':>7}")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            state, work = os.path.join(tmp, "state"), os.path.join(tmp, "work")
            os.makedirs(work)
            os.environ["XDG_RUNTIME_DIR"] = os.path.join(tmp, "run")
            os.makedirs(os.environ["XDG_RUNTIME_DIR"], mode=0o700)
            make_sessions(state, work, n)
            row = []
            for extra in ((), ("--max-open-sessions", "1")):
                p, sock = start(state, *extra)
                try:
                    row.append(anyio.run(measure, sock, reps))
                finally:
                    p.terminate()
                    p.wait()
            (w50, w90), (r50, r90) = row
            print(f"{n:>18,} {w50:>12.2f} {w90:>9.2f} {r50:>14.2f} {r90:>11.2f} {r50 / w50:>6.0f}×", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
