"""What the write-path safeguards cost (issue #8): the encodability check on every node field, the
lease a `running` node carries, finalizing interrupted nodes on open, and a commit that fails on a
full disk then succeeds — beside the durable append and the turn commit they guard.

    python bench/write_path_bench.py [--quick]

Medians of repeated runs; compare by ratios (absolute numbers are noisy on a shared machine).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

from sessiondag import Call
from sessiondag.core.depth import check_encodable
from sessiondag.store import SessionStore
from sessiondag.store.recovery import drop_lease, take_leases


def median_us(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e6)
    return statistics.median(samples)


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    n = 300 if quick else 2000
    tmp = tempfile.mkdtemp(prefix="wpbench-")
    try:
        store = SessionStore(os.path.join(tmp, "state"))
        s = store.session(store.start_session("b", working_dir=None).id)
        md = {"tool_call_id": "call_1", "gen_ai.usage.input_tokens": 120, "args": {"path": "a/b.py", "n": [1, 2, 3]}}
        out = "x" * 1200
        rows = []
        append = median_us(lambda: s.append(Call("user", "u", output=out, predecessor=s.head_id, metadata=md)), n)
        rows.append(("durable append (1.2 KB node)", append))
        node = Call("user", "u", output=out, metadata=md)
        check = median_us(lambda: [check_encodable(v, "f") for v in (node.input, node.output, node.metadata)], n)
        rows.append(("  encodability check of its fields", check))

        def running_then_done():
            c = s.append(Call("llm", "m", output="", predecessor=s.head_id, status="running"))
            s.update(c.id, output=out, status="completed")
        rows.append(("append running + update completed", median_us(running_then_done, n // 2)))
        lease = median_us(lambda: (take_leases(s.path, ["n1"]), drop_lease(s.path, "n1")), n)
        rows.append(("  lease written + removed (part of the above)", lease))
        rows.append(("turn commit (a few nodes)", median_us(lambda: (
            s.append(Call("user", "u", output=out, predecessor=s.head_id)), s.commit_turn()), n // 10)))
        for i in range(20):
            s.append(Call("llm", "m", output="", predecessor=s.head_id, status="running"))
        store.close()
        reopen = []
        for _ in range(5):
            st = SessionStore(os.path.join(tmp, "state"))
            t = time.perf_counter()
            st.session("b")
            reopen.append((time.perf_counter() - t) * 1e6)
            st.close()
        rows.append(("open with 20 orphaned running nodes (first: finalize + commit)", reopen[0]))
        rows.append(("open after that (nothing to finalize)", statistics.median(reopen[1:])))
        print(f"{'operation':<58} {'median µs':>10} {'vs append':>10}")
        for name, us in rows:
            print(f"{name:<58} {us:>10.1f} {us / append:>9.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
