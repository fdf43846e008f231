"""Big-session benchmark: one session of 100,000 nodes, in-process beside over RPC.

Rows: cold reopen, a whole-branch get_branch, the tail page of get_branch (newest first), a render
of the whole branch (cold and warm render cache), and the RSS an open session adds. Each is measured
in-process (the library call plus building the response frame the daemon would send) and through a
real daemon over its Unix socket: "received" = request sent → the whole response frame read by the
client; "+ decode" adds the client's orjson parse of it; "daemon CPU" is the daemon's user+system
time for the request, beside the in-process CPU time (on a loaded machine the wall-clock rows
swing with the load; CPU time much less). The render rows run what session/render
runs (`render_bytes` where the tree has it, else `encoded=True`); "render whole branch, cold" comes
after the get_branch rows (the bodies are read), "render, first request after open" is a fresh
process's (a fresh daemon's) first request after the open (the bodies still in storage); the "as the
runtime" rows render plain dicts in a fresh process, as a model call does. Medians of `--reps`
interleaved runs.

    python bench/big_session_bench.py [--quick] [--nodes N] [--reps K] [--state DIR] [--before DIR]

`--state DIR` reuses (or builds once) a state dir; otherwise a temp dir is built and removed.
`--before DIR` also measures another source tree of the daemon (DIR is put first on PYTHONPATH, e.g.
`git archive main daemon | tar -x -C /tmp/base` → `--before /tmp/base/daemon`), interleaved with this
one, and prints both with their ratio: before/after compared under the same machine load.
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
sys.path.insert(0, HERE)

from rpc_bench import serve_argv  # noqa: E402
from store_bench import build  # noqa: E402

SID = "big"

# In-process probes run in a child (fresh interpreter: cold open, clean RSS) with the tree under test.
CHILD = r"""
import gc, inspect, sys, time, orjson
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
from sessiondag.store import SessionStore
from sessiondag.context import messages
from sessiondag.context.messages import render_messages
from sessiondag.rpc import codec
state, sid, plain, first = sys.argv[1], sys.argv[2], sys.argv[3] == "plain", sys.argv[3] == "first"
# what session/render runs where the tree has it: each message encoded (render_bytes, spliced into the
# frame), else texts sliced from the stored lines (encoded=True)
kw = {} if plain or "encoded" not in inspect.signature(render_messages).parameters else {"encoded": True}
as_bytes = not plain and hasattr(messages, "render_bytes")
store = SessionStore(state)
store.session("small")
out = {}
gc.collect()
r0 = rss()
t = time.perf_counter()
s = store.session(sid)
out["open"] = time.perf_counter() - t
gc.collect()
out["rss_open"] = rss() - r0

def render_frame():
    if as_bytes:
        msgs, man = messages.render_bytes(s)
        msgs = codec.RawArray(msgs)
    else:
        msgs, man = render_messages(s, **kw)
    return codec.encode({"jsonrpc": "2.0", "id": 1, "result": {"messages": msgs, "manifest": man}})

if first:  # the very first request after the open: the bodies are still in storage
    t, cpu = time.perf_counter(), time.process_time()
    body = render_frame()
    print(orjson.dumps({"render_first": time.perf_counter() - t, "render_first_cpu": time.process_time() - cpu}).decode())
    raise SystemExit

def branch_frame(**kw):
    # what the daemon answers for session/get_branch, as bytes
    if hasattr(s, "get_branch_page"):
        p = s.get_branch_page(**kw)
        res = {"nodes": codec.RawArray([c.encoded() for c in p.nodes]), "head_id": p.head_id,
               "next_cursor": p.next_cursor, "total": p.total}
    else:
        nodes = s.get_branch()
        if kw:
            nodes = nodes[-kw["limit"]:][::-1]
        res = {"nodes": [c.to_dict() for c in nodes]}
    return codec.encode({"jsonrpc": "2.0", "id": 1, "result": res})

for key, bkw in (("get_branch", {}), ("tail", {"limit": 100, "order": "desc"})) if not plain else ():
    xs = []
    for _ in range(3 if key == "get_branch" else 5):
        t = time.perf_counter()
        body = branch_frame(**bkw)
        xs.append(time.perf_counter() - t)
        del body
    out[key] = sorted(xs)[len(xs) // 2]
for key in ("render_plain_cold", "render_plain_warm") if plain else ("render_cold", "render_warm"):
    t, cpu = time.perf_counter(), time.process_time()
    body = render_frame()
    out[key] = time.perf_counter() - t
    out[key + "_cpu"] = time.process_time() - cpu
    del body
gc.collect()
out["rss_after"] = rss() - r0
print(orjson.dumps(out).decode())
"""


# The transport floor: a raw asyncio server that answers every request with a prebuilt frame of
# the given size (what any daemon must at least pay to move that many bytes to this client).
FLOOR = r"""
import asyncio, sys
n = int(sys.argv[2])
frame = b"Content-Length: %d\r\n\r\n" % n + b" " * n
async def serve(r, w):
    while True:
        try:
            head = await r.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            break
        await r.readexactly(int(head.split(b":")[1].split(b"\r\n")[0]))
        w.write(memoryview(frame))
        await w.drain()
async def main():
    srv = await asyncio.start_unix_server(serve, sys.argv[1])
    print("ready", file=sys.stderr, flush=True)
    await srv.serve_forever()
asyncio.run(main())
"""


async def transport_floor(tmp: str, size: int, n: int = 3) -> float:
    """Median seconds to receive a frame of `size` bytes from the raw server (no JSON either side)."""
    sock = os.path.join(tmp, "floor.sock")
    p = subprocess.Popen([sys.executable, "-c", FLOOR, sock, str(size)], stderr=subprocess.PIPE)
    try:
        p.stderr.readline()
        reader, writer = await asyncio.open_unix_connection(sock, limit=1 << 20)
        c = Conn(reader, writer)
        xs = []
        for _ in range(n):
            t = time.perf_counter()
            c.w.write(b"Content-Length: 2\r\n\r\n{}")
            head = await c.r.readuntil(b"\r\n\r\n")
            await c.r.readexactly(int(head.split(b":")[1].split(b"\r\n")[0]))
            xs.append(time.perf_counter() - t)
        writer.close()
        return statistics.median(xs)
    finally:
        p.terminate()
        p.wait()


def proc_rss(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds the process has used (load-proof, unlike the wall-clock rows)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def env_for(tree: str | None, tmp: str) -> dict[str, str]:
    env = dict(os.environ, SESSIONDAG_HOME=os.path.join(tmp, "home"), XDG_RUNTIME_DIR=tmp)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    return env


def inprocess(state: str, tree: str | None, tmp: str) -> dict:
    out = {}
    for mode in ("daemon", "plain", "first"):  # plain: render_messages as the runtime calls it (decoded dicts)
        r = subprocess.run([sys.executable, "-c", CHILD, state, SID, mode], capture_output=True, check=True,
                           env=env_for(tree, tmp))
        res = orjson.loads(r.stdout.splitlines()[-1])
        out.update(res if mode != "plain" else {k: v for k, v in res.items() if k.startswith("render_plain")})
    return out


class Conn:
    """A sequential JSON-RPC client that times the frame's arrival and its decoding apart."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.r, self.w, self.ids = reader, writer, 0

    async def timed(self, method: str, params: dict) -> tuple[float, float, dict]:
        self.ids += 1
        body = orjson.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        t = time.perf_counter()
        self.w.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        head = await self.r.readuntil(b"\r\n\r\n")
        data = await self.r.readexactly(int(head.split(b":")[1].split(b"\r\n")[0]))
        t_recv = time.perf_counter() - t
        self.last_size = len(data)
        msg = orjson.loads(data)
        t_dec = time.perf_counter() - t
        if "error" in msg:
            raise RuntimeError(msg["error"])
        return t_recv, t_dec, msg["result"]


async def repeat(c: Conn, method: str, params: dict, n: int) -> tuple[float, float, dict]:
    """(median received, median received + decoded, the last result) of `n` calls on the big session."""
    recv, dec = [], []
    for _ in range(n):
        a, b, res = await c.timed(method, {"session_id": SID, **params})
        recv.append(a)
        dec.append(b)
    return statistics.median(recv), statistics.median(dec), res


async def start_daemon(state: str, tree: str | None, tmp: str) -> tuple[subprocess.Popen, Conn]:
    """A daemon on the state dir, warmed up on the small session (lazy imports), and a client."""
    sock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen(serve_argv("--socket", sock, "--state-dir", state), stderr=subprocess.PIPE,
                         env=env_for(tree, tmp))
    while b"ready" not in d.stderr.readline():
        if d.poll() is not None:
            raise RuntimeError("daemon exited before ready")
    reader, writer = await asyncio.open_unix_connection(sock, limit=1 << 20)
    c = Conn(reader, writer)
    for m in ("session/open", "session/get_branch", "session/render"):
        await c.timed(m, {"session_id": "small", **({"working_dir": state} if m == "session/open" else {})})
    return d, c


async def render_first(state: str, tree: str | None, tmp: str) -> dict:
    """A daemon's first request on the big session after opening it is a render (bodies in storage)."""
    d, c = await start_daemon(state, tree, tmp)
    try:
        await c.timed("session/open", {"session_id": SID, "working_dir": state})
        cpu = proc_cpu(d.pid)
        t, _, _ = await c.timed("session/render", {"session_id": SID})
        out = {"render_first": t, "render_first_cpu": proc_cpu(d.pid) - cpu}
        c.w.close()
    finally:
        d.terminate()
        d.wait()
    return out


async def over_rpc(state: str, tree: str | None, tmp: str) -> dict:
    """One daemon lifetime: warm up on a small session, then open the big one cold and measure."""
    out: dict = {}
    d, c = await start_daemon(state, tree, tmp)
    writer = c.w
    try:
        r0 = proc_rss(d.pid)
        out["open"], _, _ = await c.timed("session/open", {"session_id": SID, "working_dir": state})
        out["rss_open"] = proc_rss(d.pid) - r0
        # the first whole branch after the open also reads the bodies left in storage (node index)
        out["get_branch_first"], _, _ = await c.timed("session/get_branch", {"session_id": SID})
        out["get_branch"], out["get_branch_dec"], res = await repeat(c, "session/get_branch", {}, 3)
        out["bytes"], out["frame_branch"], out["nodes"] = len(orjson.dumps(res["nodes"])), c.last_size, len(res["nodes"])
        del res
        try:
            out["tail"], _, _ = await repeat(c, "session/get_branch", {"limit": 100, "order": "desc"}, 5)
        except RuntimeError:
            out["tail"] = None  # this daemon does not page
        cpu = proc_cpu(d.pid)
        out["render_cold"], out["render_cold_dec"], res = await c.timed("session/render", {"session_id": SID})
        out["render_cold_cpu"] = proc_cpu(d.pid) - cpu
        out["messages"], out["frame_render"] = len(res["messages"]), c.last_size
        del res
        cpu = proc_cpu(d.pid)
        out["render_warm"], out["render_warm_dec"], _ = await repeat(c, "session/render", {}, 3)
        out["render_warm_cpu"] = (proc_cpu(d.pid) - cpu) / 3
        out["rss_after"] = proc_rss(d.pid) - r0
        writer.close()
    finally:
        d.terminate()
        d.wait()
    out.update(await render_first(state, tree, tmp))
    out["floor_branch"] = await transport_floor(tmp, out["frame_branch"])
    out["floor_render"] = await transport_floor(tmp, out["frame_render"])
    return out


def med(runs: list[dict], key: str):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


ROWS = [  # label, key, unit, target for the RPC figure
    ("reopen (cold open)", "open", "s", 0.7),
    ("get_branch, whole, first after open", "get_branch_first", "s", None),
    ("get_branch, whole branch", "get_branch", "s", 0.5),
    ("  + client decode", "get_branch_dec", "s", None),
    ("  transport floor, same bytes", "floor_branch", "s", None),
    ("get_branch, 100 newest (desc)", "tail", "s", None),
    ("render whole branch, cold cache", "render_cold", "s", 1.0),
    ("  + client decode", "render_cold_dec", "s", None),
    ("  CPU for it", "render_cold_cpu", "s", None),
    ("render whole branch, warm cache", "render_warm", "s", 1.0),
    ("  + client decode", "render_warm_dec", "s", None),
    ("  CPU for it", "render_warm_cpu", "s", None),
    ("  transport floor, same bytes", "floor_render", "s", None),
    ("render, first request after open", "render_first", "s", None),
    ("  CPU for it", "render_first_cpu", "s", None),
    ("render_messages as the runtime, cold", "render_plain_cold", "s", None),
    ("  CPU for it", "render_plain_cold_cpu", "s", None),
    ("render_messages as the runtime, warm", "render_plain_warm", "s", None),
    ("RSS added by opening", "rss_open", "MB", 150.0),
    ("RSS after get_branch + render", "rss_after", "MB", None),
]


def fmt(x, unit: str) -> str:
    if x is None:
        return "—"
    if unit == "MB":
        return f"{x:,.0f} MB"
    return f"{x * 1e3:,.0f} ms" if x >= 0.01 else f"{x * 1e3:,.2f} ms"


def print_table(n: int, reps: int, res: dict[str, tuple[list[dict], list[dict]]]) -> None:
    names = list(res)
    ip0, rpc0 = res[names[-1]]
    n = int(med(rpc0, "nodes") or n)
    print(f"big session: {n:,} nodes on one branch ({med(rpc0, 'bytes') or 0:,.0f} bytes of node JSON, "
          f"{med(rpc0, 'messages') or 0:,.0f} rendered messages); median of {reps} interleaved run(s)")
    print("in-process = library call + building the response frame; RPC = real daemon, Unix socket, "
          "request sent → frame received (\"+ client decode\": and parsed); transport floor = a raw asyncio "
          "server sending a prebuilt frame of the same size to the same client; \"CPU for it\": user+system time of "
          "the process (in-process) or of the daemon (RPC) for that request — steadier than wall clock under load" + ("" if n >= 100_000 else
          "; targets apply at 100,000 nodes"))
    head = f"{'measure':<34}"
    for name in names:
        head += f" {name + ' in-proc':>17} {name + ' RPC':>14}"
    if len(names) == 2:
        head += f" {'now/before':>15}"
    head += f" {'target (RPC)':>16}"
    print(head)
    for label, key, unit, target in ROWS:
        line = f"{label:<34}"
        for name in names:
            ip, rpc = res[name]
            inproc = "" if key.endswith("_dec") or key.startswith("floor") else fmt(med(ip, key), unit)
            line += f" {inproc:>17} {fmt(med(rpc, key), unit):>14}"
        now = med(res[names[-1]][1], key)
        if len(names) == 2:
            was = med(res[names[0]][1], key)
            if now is None and was is None:  # an in-process-only row: compare those
                now, was = med(res[names[-1]][0], key), med(res[names[0]][0], key)
            line += f" {(f'{now / was:.2f}x' if now is not None and was else '—'):>15}"
        if target is not None and now is not None and n >= 100_000:
            line += f" {f'<= {target:g} {unit}':>10} {'OK' if now <= target else 'MISSED'}"
        print(line)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv

    def opt(name: str, default):
        return type(default)(argv[argv.index(name) + 1]) if name in argv else default
    n = opt("--nodes", 20_000 if quick else 100_000)
    reps = opt("--reps", 1 if quick else 3)
    keep, before = opt("--state", ""), opt("--before", "")
    tmp = tempfile.mkdtemp(prefix="sdbig-", dir=os.environ.get("SESSIONDAG_BENCH_DIR"))
    state = keep or os.path.join(tmp, "state")
    trees = ({"before": os.path.abspath(before)} if before else {}) | {"now": None}
    try:
        if not os.path.isdir(os.path.join(state, "sessions", SID)):
            t = time.perf_counter()
            build(state, SID, n)
            build(state, "small", 20)
            print(f"  built {n:,} nodes in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        res: dict[str, tuple[list[dict], list[dict]]] = {k: ([], []) for k in trees}
        for r in range(reps):  # interleaved: every tree and column sees the same machine load
            for name, tree in (list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]):
                print(f"  run {r + 1}/{reps}: {name}", file=sys.stderr, flush=True)
                res[name][0].append(inprocess(state, tree, tmp))
                res[name][1].append(asyncio.run(over_rpc(state, tree, tmp)))
        print_table(n, reps, res)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
