"""The Python client's own cost: daemon/ping through `sessiondag_client` over a Unix socket, one call at
a time (p50 latency) and 2,000 calls from 20 tasks at once (calls/s), under each anyio backend.

    python bench/client_bench.py [--before DIR] [--rounds N]

One daemon (this tree's) serves every run; each run is a fresh process whose client is this tree's
clients/python, or with `--before DIR` also that of another checkout (e.g. `git archive <commit>
clients/python | tar -x -C DIR`), measured in turn, each first every other round; medians of N rounds
(default 3). An old client that cannot run on trio shows "-" there.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

RUN = r"""
import statistics, sys, time
import anyio
from sessiondag_client import connect_unix

async def main(sock):
    c = await connect_unix(sock)
    for _ in range(200):
        await c.ping()
    lat = []
    for _ in range(2000):
        t = time.perf_counter()
        await c.ping()
        lat.append(time.perf_counter() - t)
    t0 = time.perf_counter()
    async def worker():
        for _ in range(100):
            await c.ping()
    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(worker)
    rate = 2000 / (time.perf_counter() - t0)
    await c.aclose()
    print(statistics.median(lat) * 1e6, rate)

anyio.run(main, sys.argv[1], backend=sys.argv[2])
"""


def run_client(client_dir: str, sock: str, backend: str) -> tuple[float, float] | None:
    env = dict(os.environ, PYTHONPATH=client_dir)
    r = subprocess.run([sys.executable, "-c", RUN, sock, backend], env=env, capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        return None
    p50, rate = r.stdout.split()
    return float(p50), float(rate)


def main(argv: list[str]) -> None:
    before = argv[argv.index("--before") + 1] if "--before" in argv else None
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    sides = {"this tree": os.path.join(ROOT, "clients", "python")}
    if before:
        sides = {"before": os.path.join(os.path.abspath(before), "clients", "python"), **sides}
    with tempfile.TemporaryDirectory(prefix="sd-client-bench-") as tmp:
        sock = os.path.join(tmp, "d.sock")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "daemon"),
                                                            os.path.join(ROOT, "clients", "python")]))
        daemon = subprocess.Popen([sys.executable, "-c", "from sessiondag.cli import main; main()", "serve",
                                   "--socket", sock, "--state-dir", os.path.join(tmp, "state")],
                                  env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert daemon.stderr is not None
            for raw in daemon.stderr:
                if raw.startswith(b"sessiondag: ready"):
                    break
            else:
                raise SystemExit(f"the daemon exited before ready (rc={daemon.wait()})")
            threading.Thread(target=daemon.stderr.read, daemon=True).start()   # its log must not fill the pipe
            results: dict[tuple[str, str], list[tuple[float, float]]] = {}
            names = list(sides)
            for r in range(rounds):
                for name in (names if r % 2 == 0 else names[::-1]):
                    for backend in ("asyncio", "trio"):
                        got = run_client(sides[name], sock, backend)
                        if got is not None:
                            results.setdefault((name, backend), []).append(got)
        finally:
            daemon.terminate()
            daemon.wait(30)
    print(f"sessiondag_client daemon/ping over a Unix socket, median of {rounds} rounds")
    print(f"{'client':<10} {'backend':<8} {'p50 µs':>8} {'calls/s (20 tasks)':>19}")
    for name in sides:
        for backend in ("asyncio", "trio"):
            rows = results.get((name, backend))
            if not rows:
                print(f"{name:<10} {backend:<8} {'-':>8} {'-':>19}")
                continue
            print(f"{name:<10} {backend:<8} {statistics.median(p for p, _ in rows):>8.0f} "
                  f"{statistics.median(q for _, q in rows):>19.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
