"""What reading the settings at call time costs on the write and render paths (issue 9, "Settings are
explicit"): the median of an append, an append with a spilled body, a turn commit and a render
manifest, and of one settings snapshot.

    python bench/settings_bench.py [--quick] [--before DIR]

`--before DIR` also measures another source tree of the daemon (e.g. `git archive main daemon | tar -x
-C /tmp/base` → `--before /tmp/base/daemon`), interleaved with this one in separate processes, and
prints the ratio now/before: compared under the same machine load. Absolute numbers are noisy.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, shutil, statistics, sys, tempfile, time
from sessiondag import Call, ROOT
from sessiondag.store import SessionStore
from sessiondag.context.aging import current_manifest
n = int(sys.argv[1])
def med(fn, reps=None):
    xs = []
    for _ in range(reps or n):
        t = time.perf_counter(); fn(); xs.append((time.perf_counter() - t) * 1e6)
    return statistics.median(xs)
tmp = tempfile.mkdtemp(prefix="setbench-")
store = SessionStore(os.path.join(tmp, "state"))
s = store.session(store.start_session("b", working_dir=None).id)
head = [s.append(Call("user", "u", output="hi", predecessor=ROOT)).id]
def append(body="x" * 200):
    head[0] = s.append(Call("llm" if len(head) % 2 else "user", "m", output=body, predecessor=head[0])).id
out = {"append": med(append), "append_spilled": med(lambda: append("y" * 40000)),
       "commit": med(lambda: (append(), s.commit_turn()), max(n // 5, 20)), "manifest": med(lambda: current_manifest(s))}
try:
    from sessiondag.core.settings_source import current
    out["snapshot"] = med(current)
except ImportError:
    pass
store.close()
shutil.rmtree(tmp, ignore_errors=True)
print(json.dumps(out))
"""


def run(tree: str | None, n: int) -> dict[str, float]:
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", CHILD, str(n)], env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def main(argv: list[str]) -> None:
    n = 200 if "--quick" in argv else 1000
    before = argv[argv.index("--before") + 1] if "--before" in argv else None
    trees = ({"before": os.path.abspath(before)} if before else {}) | {"now": None}
    rounds = 2 if "--quick" in argv else 5
    res: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            res[name].append(run(tree, n))
    rows = ["append", "append_spilled", "commit", "manifest", "snapshot"]
    print(f"settings bench: median µs over {rounds} interleaved rounds of {n} ({tempfile.gettempdir()})")
    print(f"{'op':<16}" + "".join(f"{k:>12}" for k in trees) + (f"{'now/before':>12}" if before else ""))
    for row in rows:
        vals = {k: statistics.median(r[row] for r in rs) for k, rs in res.items() if row in rs[0]}
        line = f"{row:<16}" + "".join(f"{vals[k]:>12.1f}" if k in vals else f"{'-':>12}" for k in trees)
        if before and "before" in vals and "now" in vals:
            line += f"{vals['now'] / vals['before']:>12.2f}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
