"""Issue 21's read-path rows, measured on this tree and on a `before` checkout in the same run.

    python bench/read_rows.py [--before DIR] [--rounds N] [--quick] [--state DIR]     (the rows alone)

(`--state DIR`: build the sessions there, or reuse the ones an earlier run built there.)

`read_rows(before_dir)` builds the sessions once (with this tree), then measures each tree in turn
for N rounds (each first every other round), every measurement in a fresh process with that tree's
daemon/ (and clients/python/) first on the path; figures are medians over the rounds, with the CPU
time of the process that did the work beside the wall clock (on a loaded machine the CPU figure is
the steadier one). Rows, as dicts {"path", "before", "now", "goal", "met"}:

- render_bench, 100k / 10k-node branch, cold: render_bench.py's branch (tool calls, an agentic
  function with inner calls, 8 nodes a turn), reopened and every body decoded (as render_bench's
  live nodes are), then render_context + render_dag_messages after drop_cache; median of 3.
- render_messages as the runtime calls it, 100k, cold: a fresh process opens store_bench's
  100k-node chat and renders it as runtime/calls.py does for an "openai" provider (the bodies still
  in storage): EncodedMessages where the tree has them, else plain dicts; the main thread's CPU
  beside. Then the same on the same chat in the shape the runtime writes it (each reply called by
  its user node: build_runtime_chat), right before or after it in the same round (the order
  alternating). (The read-ahead thread's A/B, the row this one replaced, was settled at d25d1af.)
- render whole branch over RPC, cold, 100k: a daemon's first session/render of that chat after a
  whole get_branch (request sent -> frame received; the daemon's CPU beside it).
- get_branch 100k over RPC + the Python client's decode: `AsyncClient.get_branch` (the tree's own
  client) until the list of Calls is there, against the transport floor for the same bytes (a raw
  server sending a prebuilt frame of that size: big_session_bench.FLOOR), each get_branch followed
  by one floor read from the same client process: the ratio is the median of those pairs' ratios
  (the floor moves with the machine's load as much as the call does); the client's CPU beside.
- first render after open, 100k, over RPC: a fresh daemon's session/open + session/render.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import orjson

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from big_session_bench import FLOOR, Conn, proc_cpu  # noqa: E402
from rpc_bench import serve_argv  # noqa: E402

BIG = "big"
RT = "runtime-shaped"

# render_bench's branch, cold, in a child: argv = state dir, session ids...
RENDER_CHILD = r"""
import statistics, sys, time, orjson
from sessiondag.store import SessionStore
from sessiondag.context import cache as cache_mod
from sessiondag.context.messages import render_dag_messages
from sessiondag.context.render import render_context
store = SessionStore(sys.argv[1])
out = {}
for sid in sys.argv[2:]:
    s = store.session(sid)
    for c in s.graph.nodes.values():
        c.touch()  # bodies decoded, as render_bench's appended nodes are
    walls, cpus = [], []
    for _ in range(3):
        cache_mod.drop_cache(s)
        t, c = time.perf_counter(), time.process_time()
        render_dag_messages(render_context(s), "openai", session=s)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out[sid] = [statistics.median(walls), statistics.median(cpus)]
print(orjson.dumps(out).decode())
"""

RUNTIME_CHILD = r"""
import os, sys, time, orjson
from sessiondag.store import SessionStore
if os.environ.get("SD_BENCH_READ_AHEAD") == "off":
    try:  # a tree with the read-ahead thread (store/node_index.py): none started
        from sessiondag.store.node_index import ChunkReader
        ChunkReader.AHEAD = 0
    except ImportError:
        pass
from sessiondag.context.renderer import renderer_for
try:  # a tree whose runtime carries the encoded render to an "openai" provider (runtime/calls.py)
    from sessiondag.context.encoded_messages import EncodedMessages
except ImportError:
    EncodedMessages = None
store = SessionStore(sys.argv[1])
store.session("small")
s = store.session(sys.argv[2])
t, c, m = time.perf_counter(), time.process_time(), time.thread_time()
if EncodedMessages is None:
    msgs = list(renderer_for(s).messages(s)[0])
else:
    msgs = EncodedMessages(renderer_for(s).encoded(s)[0])
print(orjson.dumps([time.perf_counter() - t, time.process_time() - c, len(msgs), time.thread_time() - m]).decode())
"""

# the tree's own Python client: get_branch until the Calls are there, each call followed by a read
# of the same number of bytes from the raw floor server (argv[3]) on the same event loop: the
# floor is measured in the same process and round, next to what it is compared with. Prints the
# medians (get_branch wall, its cpu, the floor wall) and the median of the per-pair ratios.
CLIENT_CHILD = r"""
import asyncio, statistics, sys, time, orjson
from sessiondag_client import connect_unix
async def floor_read(r, w):
    t = time.perf_counter()
    w.write(b"Content-Length: 2\r\n\r\n{}")
    head = await r.readuntil(b"\r\n\r\n")
    await r.readexactly(int(head.split(b":")[1].split(b"\r\n")[0]))
    return time.perf_counter() - t
async def main():
    c = await connect_unix(sys.argv[1], timeout=300)
    fr, fw = await asyncio.open_unix_connection(sys.argv[3], limit=1 << 20)
    xs, cpus, floors = [], [], []
    for _ in range(3):
        t, cpu = time.perf_counter(), time.process_time()
        nodes = await c.get_branch(sys.argv[2])
        xs.append(time.perf_counter() - t)
        cpus.append(time.process_time() - cpu)
        assert len(nodes) > 0 and type(nodes[0]).__name__ == "Call"
        del nodes
        floors.append(await floor_read(fr, fw))
    fw.close()
    await c.aclose()
    print(orjson.dumps([statistics.median(xs), statistics.median(cpus), statistics.median(floors),
                        statistics.median(x / f for x, f in zip(xs, floors))]).decode())
asyncio.run(main())
"""


def _env(tree: str, tmp: str) -> dict[str, str]:
    path = os.pathsep.join([os.path.join(tree, "daemon"), os.path.join(tree, "clients", "python")])
    return dict(os.environ, PYTHONPATH=path, SESSIONDAG_HOME=os.path.join(tmp, "home"), XDG_RUNTIME_DIR=tmp)


def _child(code: str, tree: str, tmp: str, *args: str, env: dict[str, str] | None = None):
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env=_env(tree, tmp) | (env or {}))
    if r.returncode:
        raise RuntimeError(f"bench child failed ({tree}):\n{r.stderr[-2000:]}")
    return orjson.loads(r.stdout.splitlines()[-1])


def build(state: str, sizes: dict[str, int], chat: int) -> None:
    """render_bench's branches (one session per size) and store_bench's chat, with this tree."""
    from render_bench import add_turn, NODES_PER_TURN
    from store_bench import build as build_chat

    from sessiondag.context.system_prompt import build_system_prompt, record_system_prompt
    from sessiondag.store import SessionStore
    store = SessionStore(state)
    for sid, n in sizes.items():
        store.start_session(sid, working_dir=state)
        s = store.session(sid)
        record_system_prompt(s, build_system_prompt(identity="You are a careful engineer.", tools=[
            {"name": "grep", "description": "search", "parameters": {"type": "object"}}]))
        for k in range(max(1, n // NODES_PER_TURN)):
            add_turn(s, k)
            if k % 50 == 49:
                s.commit_turn()
        s.commit_turn()
    store.close()
    build_chat(state, BIG, chat)
    build_chat(state, "small", 20)
    build_runtime_chat(state, RT, chat)


def build_runtime_chat(state: str, sid: str, n: int, turn: int = 50) -> None:
    """store_bench's chat in the shape the runtime writes it (runtime/loop.py): each reply called
    by its user node (caller = the user node, predecessor = the chain's tip), a commit a turn."""
    from store_bench import chat_messages

    from sessiondag.core.model import ROOT, Call
    from sessiondag.store import SessionStore
    store = SessionStore(state)
    store.start_session(sid, working_dir=state)
    s = store.session(sid)
    msgs = chat_messages(1000)
    head, user, done = ROOT, ROOT, 0
    while done < n:
        batch = []
        for i in range(done, min(done + turn, n)):
            m = msgs[i % 1000]
            if m["role"] == "user":
                c = Call("user", "chat", output=m["content"], predecessor=head)
                user = c.id
            else:
                c = Call("llm", "model-x", output=m["content"], caller=user, predecessor=head,
                         metadata={"gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 40})
            head = c.id
            batch.append(c)
        s.append_many(batch)
        s.commit_turn()
        done += len(batch)
    store.close()


async def _daemon(tree: str, state: str, tmp: str) -> tuple[subprocess.Popen, Conn, str]:
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen(serve_argv("--socket", sock, "--state-dir", state), stderr=subprocess.PIPE,
                         env=_env(tree, tmp))
    while b"ready" not in d.stderr.readline():
        if d.poll() is not None:
            raise RuntimeError(f"daemon of {tree} exited before ready")
    c = Conn(*await asyncio.open_unix_connection(sock, limit=1 << 20))
    for m in ("session/open", "session/get_branch", "session/render"):  # lazy imports, on a small session
        await c.timed(m, {"session_id": "small", **({"working_dir": state} if m == "session/open" else {})})
    return d, c, sock


def _stop(d: subprocess.Popen, c: Conn) -> None:
    c.w.close()
    d.terminate()
    d.wait()


async def _over_rpc(tree: str, state: str, tmp: str) -> dict:
    out: dict = {}
    d, c, sock = await _daemon(tree, state, tmp)
    try:
        await c.timed("session/open", {"session_id": BIG, "working_dir": state})
        await c.timed("session/get_branch", {"session_id": BIG})  # the bodies read
        out["frame"] = c.last_size
        fsock = os.path.join(tmp, "floor.sock")
        fl = subprocess.Popen([sys.executable, "-c", FLOOR, fsock, str(c.last_size)], stderr=subprocess.PIPE)
        try:
            fl.stderr.readline()  # ready
            out["client"] = await asyncio.to_thread(_child, CLIENT_CHILD, tree, tmp, sock, BIG, fsock)
        finally:
            fl.terminate()
            fl.wait()
        cpu = proc_cpu(d.pid)
        out["render_cold"] = (await c.timed("session/render", {"session_id": BIG}))[0]
        out["render_cold_cpu"] = proc_cpu(d.pid) - cpu
    finally:
        _stop(d, c)
    d, c, _ = await _daemon(tree, state, tmp)  # a fresh daemon: open, then render first
    try:
        cpu = proc_cpu(d.pid)
        t = time.perf_counter()
        await c.timed("session/open", {"session_id": BIG, "working_dir": state})
        await c.timed("session/render", {"session_id": BIG})
        out["open_render"] = time.perf_counter() - t
        out["open_render_cpu"] = proc_cpu(d.pid) - cpu
    finally:
        _stop(d, c)
    return out


def _measure(tree: str, state: str, tmp: str, sizes: dict[str, int], r: int = 0) -> dict:
    out = {"render": _child(RENDER_CHILD, tree, tmp, state, *sizes)}
    for sid in ((BIG, RT) if r % 2 == 0 else (RT, BIG)):
        out["runtime" if sid == BIG else "runtime_shaped"] = _child(RUNTIME_CHILD, tree, tmp, state, sid)
    out.update(asyncio.run(_over_rpc(tree, state, tmp)))
    return out


def _ms(x: float) -> str:
    return f"{x * 1e3:,.0f} ms"


def _with_cpu(wall: float, cpu: float) -> str:
    return f"{_ms(wall)} (cpu {cpu * 1e3:,.0f})"


def _rows(runs: list[dict], sizes: dict[str, int]) -> dict[str, tuple[str, float]]:
    """path -> (figure, the value the goal is checked on)."""
    def med(f):
        return statistics.median(f(r) for r in runs)
    out = {}
    big, small = list(sizes)[1], list(sizes)[0]
    for sid, label in ((big, "render_bench, 100k-node branch, cold"), (small, "render_bench, 10k-node branch, cold")):
        w, c = med(lambda r: r["render"][sid][0]), med(lambda r: r["render"][sid][1])
        out[label] = (_with_cpu(w, c), w)
    for key, label in (("runtime", "render_messages as the runtime calls it, 100k, cold"),
                       ("runtime_shaped", "the same, replies called by their user node")):
        w, c, m = med(lambda r: r[key][0]), med(lambda r: r[key][1]), med(lambda r: r[key][3])
        out[label] = (f"{_ms(w)} (cpu {c * 1e3:,.0f}, main {m * 1e3:,.0f})", w)
    w, c = med(lambda r: r["render_cold"]), med(lambda r: r["render_cold_cpu"])
    out["render whole branch over RPC, cold, 100k"] = (_with_cpu(w, c), w)
    w, c = med(lambda r: r["client"][0]), med(lambda r: r["client"][1])
    floor, ratio = med(lambda r: r["client"][2]), med(lambda r: r["client"][3])
    out["get_branch 100k over RPC + the Python client's decode"] = (
        f"{_ms(w)} = {ratio:.2f}x floor {_ms(floor)} (client cpu {c * 1e3:,.0f})", ratio)
    w, c = med(lambda r: r["open_render"]), med(lambda r: r["open_render_cpu"])
    out["first render after open, 100k, over RPC"] = (_with_cpu(w, c), w)
    return out


GOALS: dict[str, tuple[str, float | None]] = {  # path -> (goal as printed, limit on the checked value; None: no goal)
    "render_bench, 100k-node branch, cold": ("<= 500 ms", 0.5),
    "render_bench, 10k-node branch, cold": ("<= 30 ms", 0.03),
    "render_messages as the runtime calls it, 100k, cold": ("<= 500 ms", 0.5),
    "the same, replies called by their user node": ("<= 500 ms", 0.5),
    "render whole branch over RPC, cold, 100k": ("<= 500 ms", 0.5),
    "get_branch 100k over RPC + the Python client's decode": ("<= 1.5x", 1.5),
    "first render after open, 100k, over RPC": ("<= 0.7 s", 0.7),
}


def read_rows(before_dir: str | None, rounds: int = 3, quick: bool = False, state: str | None = None) -> list[dict]:
    """`state`: a state dir to build the sessions in, or to reuse when an earlier run built them there."""
    sizes = {"rb10k": 2_000, "rb100k": 20_000} if quick else {"rb10k": 10_000, "rb100k": 100_000}
    chat = 20_000 if quick else 100_000
    tmp = tempfile.mkdtemp(prefix="sd-read-", dir=os.environ.get("SESSIONDAG_BENCH_DIR"))
    trees = ({"before": os.path.abspath(before_dir)} if before_dir else {}) | {"now": ROOT}
    try:
        t = time.perf_counter()
        if state is None or not os.path.exists(os.path.join(state, "built")):
            state = state or os.path.join(tmp, "state")
            build(state, sizes, chat)
            open(os.path.join(state, "built"), "w").close()
            print(f"  read rows: sessions built in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        runs: dict[str, list[dict]] = {k: [] for k in trees}
        for r in range(rounds):
            for name, tree in (list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]):
                print(f"  read rows, round {r + 1}/{rounds}: {name}", file=sys.stderr, flush=True)
                runs[name].append(_measure(tree, state, tmp, sizes, r))
        got = {name: _rows(rs, sizes) for name, rs in runs.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    for path, (goal, limit) in GOALS.items():
        now, value = got["now"][path]
        rows.append({"path": path, "now": now,
                     "before": got["before"][path][0] if "before" in got else "",
                     "goal": goal + (" (at full size)" if quick and goal else ""),
                     "met": None if quick or limit is None else value <= limit})
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    before = argv[argv.index("--before") + 1] if "--before" in argv else None
    quick = "--quick" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else (1 if quick else 3)
    load = os.getloadavg()[0]
    state = argv[argv.index("--state") + 1] if "--state" in argv else None
    rows = read_rows(before, rounds=rounds, quick=quick, state=state)
    print(f"issue 21, read path: medians of {rounds} interleaved round(s); load average {load:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end, {os.cpu_count()} CPUs")
    for r in rows:
        met = {True: "yes", False: "NO", None: ""}[r["met"]]
        print(f"{r['path']:<58} {r['before']:>24} {r['now']:>34} {r['goal']:>10} {met}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
