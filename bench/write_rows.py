"""Issue 21's write-path rows, measured on this tree and on a `before` checkout in the same run.

    python bench/write_rows.py [--before DIR] [--rounds N] [--quick]     (the rows alone)
    python bench/write_rows.py --child [--quick]                         (one tree: JSON on stdout)

`write_rows(before_dir)` runs a child process per tree and round (the tree's daemon/ first on the
path, the bench code always this tree's), the two trees in turn and each first every other round,
and gives the rows as dicts {"path", "before", "now", "goal", "met"}; figures are medians over the
rounds, and each ratio is computed inside one child (the systems compared ran interleaved in blocks
of 50 under the same load) before the median is taken.

What a child measures, every system in the same process, interleaved:
- the 2,000-message chat of store_bench.py: our durable append, append + commit_turn every 2
  messages, an fsync'd JSONL file, a bare write + fdatasync (`pwrite` of the very bytes our journal
  line holds into a zero-preallocated file, then `fdatasync`: the floor of a durable append), the
  Agents SDK SQLiteSession; turn commit latency (p50, and the mean: the rate pays it, pack merges
  included), the CPU (process time) of a turn commit and of an
  append (the figures a loaded machine moves least), and the fsync/fdatasync calls per commit (counted by
  wrapping os.fsync/os.fdatasync, which our store and dulwich call);
- frameworks_bench.py's adapters against each framework's SQLite store, and its floor (one bare
  pwrite + fdatasync per call: the ceiling of any adapter making each call durable by itself);
- session/append of a 256-byte node over RPC (unix socket, stdio), 1 in flight, against in-process
  appends of the same node, one of each in turn (rpc_bench.py's client, `interleaved_appends`).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))   # the fsync counter the tests use too

from fsync_count import FsyncCount, count_fsyncs  # noqa: E402

FSYNCS = FsyncCount()   # installed in the child (count_fsyncs), read around each commit


# --- one tree (the child) -----------------------------------------------------------------------

def _chat(root: str, n: int) -> dict:
    import orjson

    from store_bench import AgentsSqlite, Jsonl, Ours, call_of, chat_workload, pct

    from frameworks_bench import Floor

    class Bare(Floor):
        name = "bare write + fdatasync"
        file, size = "bare.log", 64 << 20

        def line(self, m: dict) -> bytes:
            return self.lines.pop()

    class Timed(Ours):  # also times Session.append alone: the Call (its id minted) built before the clock
        def __init__(self, root: str):
            super().__init__(root)
            self.alone: list[float] = []

        def step(self, m: dict) -> None:
            c = call_of(m, self.head)
            a = time.perf_counter()
            self.s.append(c)
            self.alone.append(time.perf_counter() - a)
            self.head = c.id
            self.i += 1

    class Commit2(Ours):
        def __init__(self, root: str):
            super().__init__(root, 2)
            self.commits: list[float] = []
            self.commit_cpu: list[float] = []   # process time: what the load of the machine changes least
            self.appends: list[tuple[float, float]] = []  # (wall, process time) of each append
            self.fsyncs: list[int] = []

        def step(self, m: dict) -> None:
            c = call_of(m, self.head)
            a, cpu = time.perf_counter(), time.process_time()
            self.s.append(c)
            self.appends.append((time.perf_counter() - a, time.process_time() - cpu))
            self.head = c.id
            self.i += 1
            if self.i % 2 == 0:
                f, a, cpu = FSYNCS.n, time.perf_counter(), time.process_time()
                self.s.commit_turn()
                self.commits.append(time.perf_counter() - a)
                self.commit_cpu.append(time.process_time() - cpu)
                self.fsyncs.append(FSYNCS.n - f)

    from store_bench import chat_messages
    msgs = chat_messages(n)
    bare_lines = [orjson.dumps({"a": call_of(m, "ROOT").to_dict()}) + b"\n" for m in msgs]
    made: dict[str, object] = {}

    def keep(cls):
        def make(r):
            x = made[cls.__name__] = cls(r)
            if cls is Bare:
                x.lines = list(reversed(bare_lines))
            return x
        return make
    res = chat_workload(root, n, makers=[keep(Timed), keep(Commit2), keep(Jsonl), keep(Bare), keep(AgentsSqlite)])
    c2 = made["Commit2"]
    ours, jsonl = res["sessiondag append (durable)"], res["JSONL + fsync per line"]
    return {"append_vs_jsonl": ours["rate"] / jsonl["rate"],
            "append_p50_vs_bare": ours["p50"] / res["bare write + fdatasync"]["p50"],
            "append_alone_p50_vs_bare": pct(made["Timed"].alone, 50) / res["bare write + fdatasync"]["p50"],
            "append_p50_us": ours["p50"] * 1e6, "bare_p50_us": res["bare write + fdatasync"]["p50"] * 1e6,
            "append_vs_sqlitesession": ours["rate"] / res["Agents SDK SQLiteSession.add_items"]["rate"],
            "commit2_vs_jsonl": res["sessiondag append + commit every 2"]["rate"] / jsonl["rate"],
            "commit2_rate": res["sessiondag append + commit every 2"]["rate"],
            "commit_p50_ms": pct(c2.commits, 50) * 1e3, "commit_cpu_p50_us": pct(c2.commit_cpu, 50) * 1e6,
            "commit_mean_ms": statistics.fmean(c2.commits) * 1e3,
            "commit_cpu_mean_us": statistics.fmean(c2.commit_cpu) * 1e6,
            "append_cpu_p50_us": pct([cpu for _, cpu in c2.appends], 50) * 1e6,
            "fsyncs_per_commit": statistics.fmean(c2.fsyncs), "fsyncs_per_commit_max": max(c2.fsyncs)}


def _frameworks(root: str, n: int) -> dict:
    from frameworks_bench import workload
    res = workload(root, n)
    get = lambda k: res[k]["rate"]  # noqa: E731
    sq, lg = get("Agents SDK SQLiteSession.add_items"), get("LangGraph SqliteSaver.put")
    return {"session_vs_sqlite": get("sessiondag SessiondagSession.add_items") / sq,
            "session1_vs_sqlite": get("sessiondag SessiondagSession.add_items, commit every 1") / sq,
            "session1_p50_ms": res["sessiondag SessiondagSession.add_items, commit every 1"]["p50"] * 1e3,
            "saver_vs_sqlite": get("sessiondag SessiondagSaver.put") / lg,
            "saver1_vs_sqlite": get("sessiondag SessiondagSaver.put, commit every 1") / lg,
            "saver1_p50_ms": res["sessiondag SessiondagSaver.put, commit every 1"]["p50"] * 1e3,
            "floor_vs_sqlite": get("floor: pwrite + fdatasync per call") / sq,
            "floor_vs_sqlitesaver": get("floor: pwrite + fdatasync per call") / lg}


async def _rpc(root: str, n: int) -> dict:
    from rpc_bench import _socket_daemon, _spawn_stdio, interleaved_appends, serve_argv
    env = dict(os.environ, SESSIONDAG_HOME=os.path.join(root, "home"), XDG_RUNTIME_DIR=root)
    work = os.path.join(root, "work")
    os.makedirs(work, exist_ok=True)
    out = {}
    for transport in ("unix", "stdio"):
        if transport == "unix":
            d, c = await _socket_daemon(root, env)
        else:
            d, c = await _spawn_stdio(serve_argv("--stdio", "--state-dir", os.path.join(root, "state-stdio")), env)
        await c.call("session/open", {"session_id": "bench", "working_dir": work})
        r = await interleaved_appends(c, os.path.join(root, f"inproc-{transport}"), work, n)
        out[f"rpc_{transport}_vs_inprocess"] = r["rpc"]["rps"] / r["inproc"]["rps"]
        out[f"rpc_{transport}_p50_us"], out[f"inproc_{transport}_p50_us"] = r["rpc"]["p50"], r["inproc"]["p50"]
        out[f"ping_{transport}_p50_us"] = r["ping"]["p50"]
        await c.close()
        d.terminate()
        if transport == "unix":
            d.wait()
        else:
            await d.wait()
    return out


def child(quick: bool) -> dict:
    global FSYNCS
    FSYNCS = count_fsyncs()
    root = tempfile.mkdtemp(prefix="sdw21-", dir=os.environ.get("SESSIONDAG_BENCH_DIR"))
    try:
        out = {}
        for part, fn in (("chat", lambda d: _chat(d, 500 if quick else 2000)),
                         ("frameworks", lambda d: _frameworks(d, 300 if quick else 2000)),
                         ("rpc", lambda d: asyncio.run(_rpc(d, 300 if quick else 1500)))):
            d = os.path.join(root, part)
            os.makedirs(d)
            out.update(fn(d))
            subprocess.run(["rm", "-rf", d])
        return out
    finally:
        subprocess.run(["rm", "-rf", root])


# --- both trees (the parent) --------------------------------------------------------------------

def _run_child(tree: str | None, quick: bool) -> dict:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(tree, "daemon"), os.path.join(tree, "clients", "python")])
    else:
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "daemon"), os.path.join(HERE, "..", "clients", "python")])
    argv = [sys.executable, os.path.join(HERE, "write_rows.py"), "--child"] + (["--quick"] if quick else [])
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"write-path bench of {tree or 'this tree'} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


ROWS = [  # (path, figure, format, goal text, goal test)
    ("durable append vs fsync'd JSONL (2,000-msg chat)", "append_vs_jsonl", "{:.2f}×", "≥ 1.0×", lambda v: v >= 1.0),
    ("  durable append p50 vs bare pwrite + fdatasync (pre-zeroed file, as the journal)",
     "append_p50_vs_bare", "{:.2f}×", "≤ 1.1×", lambda v: v <= 1.1),
    ("  (the same, Session.append alone: the Call and its id made before the clock)",
     "append_alone_p50_vs_bare", "{:.2f}×", "", None),
    ("durable append vs Agents SDK SQLiteSession", "append_vs_sqlitesession", "{:.2f}×", "≥ 3×", lambda v: v >= 3),
    ("append + commit every 2 messages vs JSONL", "commit2_vs_jsonl", "{:.2f}×", "≥ 0.4×", lambda v: v >= 0.4),
    ("  turn commit p50", "commit_p50_ms", "{:.2f} ms", "≤ 1 ms", lambda v: v <= 1.0),
    ("  turn commit p50, CPU (process time: user + system)", "commit_cpu_p50_us", "{:.0f} µs", "", None),
    ("  turn commit mean (the rate's share: pack merges included)", "commit_mean_ms", "{:.2f} ms", "", None),
    ("  turn commit mean, CPU", "commit_cpu_mean_us", "{:.0f} µs", "", None),
    ("  durable append p50, CPU (user + system, in the commit-every-2 chat)", "append_cpu_p50_us", "{:.0f} µs", "", None),
    ("  fsyncs per turn commit (mean)", "fsyncs_per_commit", "{:.2f}", "≤ 2", lambda v: v <= 2),
    ("  fsyncs per turn commit (max)", "fsyncs_per_commit_max", "{:.0f}", "≤ 2", lambda v: v <= 2),
    ("SessiondagSession vs SQLiteSession.add_items", "session_vs_sqlite", "{:.2f}×", "≥ 2×", lambda v: v >= 2),
    ("  committing every call", "session1_vs_sqlite", "{:.2f}×", "≥ 0.5×", lambda v: v >= 0.5),
    ("  (ceiling: one bare pwrite + fdatasync per call vs add_items)", "floor_vs_sqlite", "{:.2f}×", "", None),
    ("SessiondagSaver vs SqliteSaver.put", "saver_vs_sqlite", "{:.2f}×", "", None),
    ("  committing every put", "saver1_vs_sqlite", "{:.2f}×", "≥ 5×", lambda v: v >= 5),
    ("  (ceiling: one bare pwrite + fdatasync per call vs put)", "floor_vs_sqlitesaver", "{:.2f}×", "", None),
    ("session/append over RPC, 1 in flight, vs in-process (unix)", "rpc_unix_vs_inprocess", "{:.2f}×", "≥ 0.6×",
     lambda v: v >= 0.6),
    ("session/append over RPC, 1 in flight, vs in-process (stdio)", "rpc_stdio_vs_inprocess", "{:.2f}×", "≥ 0.6×",
     lambda v: v >= 0.6),
]


def write_rows(before_dir: str | None, rounds: int = 3, quick: bool = False) -> list[dict]:
    """The write-path rows of issue 21 (see the module doc); `before_dir` None: no before column."""
    runs: dict[str, list[dict]] = {"before": [], "now": []}
    sides = ("before", "now") if before_dir else ("now",)
    for r in range(rounds):
        for side in (sides if r % 2 == 0 else tuple(reversed(sides))):
            print(f"  write rows: round {r + 1}/{rounds}, {side}", file=sys.stderr, flush=True)
            runs[side].append(_run_child(before_dir if side == "before" else None, quick))
    med = {side: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for side, rs in runs.items() if rs}
    out = []
    for path, key, fmt, goal, test in ROWS:
        now = med["now"][key]
        before = med.get("before", {}).get(key)
        out.append({"path": path, "now": fmt.format(now), "before": "" if before is None else fmt.format(before),
                    "goal": goal, "met": None if test is None else bool(test(now))})
    extra = med["now"]
    out.append({"path": "  (absolute: append p50 / bare p50 / commit-every-2 rate)", "goal": "", "met": None,
                "now": f"{extra['append_p50_us']:.0f} / {extra['bare_p50_us']:.0f} µs, {extra['commit2_rate']:.0f}/s",
                "before": "" if "before" not in med else
                f"{med['before']['append_p50_us']:.0f} / {med['before']['bare_p50_us']:.0f} µs, "
                f"{med['before']['commit2_rate']:.0f}/s"})
    if "rpc_unix_p50_us" in extra:
        fmt_rpc = lambda m: "; ".join(  # noqa: E731
            f"{t} {m[f'rpc_{t}_p50_us']:.0f}/{m[f'inproc_{t}_p50_us']:.0f}/{m.get(f'ping_{t}_p50_us', float('nan')):.0f}"
            for t in ("unix", "stdio")) + " µs"
        out.append({"path": "  (absolute p50 per transport: RPC append / in-process append / daemon/ping)", "goal": "",
                    "met": None, "now": fmt_rpc(extra), "before": fmt_rpc(med["before"]) if "before" in med else ""})
    return out


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    if "--child" in argv:
        print(json.dumps(child(quick)))
        return 0
    before = argv[argv.index("--before") + 1] if "--before" in argv else None
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else (1 if quick else 3)
    for row in write_rows(before, rounds, quick):
        met = "" if row["met"] is None else ("met" if row["met"] else "NOT met")
        print(f"{row['path']:<62} {row['before']:>12} {row['now']:>12} {row['goal']:>8} {met}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
