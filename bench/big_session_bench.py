"""Big-session benchmark: one session of 100,000 nodes, in-process beside over RPC.

Rows: cold reopen, a full get_branch, the tail page of get_branch (newest first), a render of the
whole branch (cold and warm cache), and the RSS an open session adds — each measured in-process
(the library call plus the orjson encode the daemon would do) and through a real daemon over its
Unix socket (request sent → response received and decoded by the client). Medians of `--reps`.

    python bench/big_session_bench.py [--quick] [--nodes N] [--reps K] [--state DIR]

`--state DIR` reuses (or creates once) a built state dir; otherwise a temp dir is built and removed.
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

from rpc_bench import Client, serve_argv  # noqa: E402
from store_bench import build  # noqa: E402

SID = "big"
TARGETS = {"reopen": 0.7, "get_branch": 0.5, "render": 1.0, "rss": 150.0}

# In-process probes run in a child so that RSS and cold-open figures start from a fresh interpreter.
CHILD = r"""
import gc, os, sys, time, orjson
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
from sessiondag.store import SessionStore
from sessiondag.context.messages import render_messages
state, sid, what = sys.argv[1], sys.argv[2], sys.argv[3]
store = SessionStore(state)
out = {}
if what == "open":
    gc.collect()
    r0 = rss()
    t = time.perf_counter()
    s = store.session(sid)
    n = len(s.graph.nodes)
    out["open"] = time.perf_counter() - t
    gc.collect()
    out["rss_open"] = rss() - r0
    t = time.perf_counter()
    body = orjson.dumps({"nodes": [c.to_dict() for c in s.get_branch()]})
    out["get_branch"] = time.perf_counter() - t
    out["bytes"] = len(body)
    del body
    t = time.perf_counter()
    body = orjson.dumps({"nodes": [c.to_dict() for c in s.get_branch()[-100:][::-1]]})
    out["tail"] = time.perf_counter() - t
    t = time.perf_counter()
    msgs, man = render_messages(s)
    body = orjson.dumps({"messages": msgs, "manifest": man})
    out["render_cold"] = time.perf_counter() - t
    del body, msgs
    t = time.perf_counter()
    msgs, man = render_messages(s)
    body = orjson.dumps({"messages": msgs, "manifest": man})
    out["render_warm"] = time.perf_counter() - t
    del body, msgs
    gc.collect()
    out["rss_after"] = rss() - r0
print(orjson.dumps(out).decode())
"""


def proc_rss(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def inprocess(state: str) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, state, SID, "open"], capture_output=True, check=True)
    return orjson.loads(r.stdout.splitlines()[-1])


async def timed(c: Client, method: str, params: dict) -> tuple[float, dict]:
    t = time.perf_counter()
    msg = await c.send(method, params)
    dt = time.perf_counter() - t
    if "error" in msg:
        raise RuntimeError(msg["error"])
    return dt, msg["result"]


async def over_rpc(state: str, tmp: str, small_state: str, first: bool) -> dict:
    """One daemon lifetime: warm up on a small session, then open the big one cold and measure."""
    sock = os.path.join(tmp, "d.sock")
    env = dict(os.environ, SESSIONDAG_HOME=os.path.join(tmp, "home"), XDG_RUNTIME_DIR=tmp)
    d = subprocess.Popen(serve_argv("--socket", sock, "--state-dir", state), stderr=subprocess.PIPE, env=env)
    out: dict = {}
    try:
        while b"ready" not in d.stderr.readline():
            if d.poll() is not None:
                raise RuntimeError("daemon exited before ready")
        c = Client(*await asyncio.open_unix_connection(sock, limit=1 << 20))
        # warm-up: lazily imported modules (render, views) loaded on a small session first
        await c.call("session/open", {"session_id": "small", "working_dir": state})
        await c.call("session/get_branch", {"session_id": "small"})
        await c.call("session/render", {"session_id": "small"})
        r0 = proc_rss(d.pid)
        out["open"], _ = await timed(c, "session/open", {"session_id": SID, "working_dir": state})
        out["rss_open"] = proc_rss(d.pid) - r0
        if first:
            gb = []
            for _ in range(3):
                dt, res = await timed(c, "session/get_branch", {"session_id": SID})
                gb.append(dt)
            out["get_branch"] = statistics.median(gb)
            out["nodes"] = len(res["nodes"])
            del res
            try:
                tl = []
                for _ in range(5):
                    dt, res = await timed(c, "session/get_branch", {"session_id": SID, "limit": 100, "order": "desc"})
                    tl.append(dt)
                out["tail"] = statistics.median(tl)
                assert len(res["nodes"]) == 100
            except RuntimeError:
                out["tail"] = None  # paging not served by this daemon
            out["render_cold"], res = await timed(c, "session/render", {"session_id": SID})
            out["messages"] = len(res["messages"])
            del res
            rw = []
            for _ in range(3):
                dt, res = await timed(c, "session/render", {"session_id": SID})
                rw.append(dt)
            out["render_warm"] = statistics.median(rw)
            del res
            out["rss_after"] = proc_rss(d.pid) - r0
        await c.close()
    finally:
        d.terminate()
        d.wait()
    return out


def med(runs: list[dict], key: str):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv

    def opt(name: str, default):
        return type(default)(argv[argv.index(name) + 1]) if name in argv else default
    n = opt("--nodes", 20_000 if quick else 100_000)
    reps = opt("--reps", 1 if quick else 3)
    keep = opt("--state", "")
    tmp = tempfile.mkdtemp(prefix="sdbig-", dir=os.environ.get("SESSIONDAG_BENCH_DIR"))
    state = keep or os.path.join(tmp, "state")
    try:
        if not os.path.isdir(os.path.join(state, "sessions", SID)):
            t = time.perf_counter()
            build(state, SID, n)
            build(state, "small", 20)
            print(f"  built {n:,} nodes in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        ip, rpc = [], []
        for r in range(reps):  # interleaved, so both columns see the same machine load
            ip.append(inprocess(state))
            rpc.append(asyncio.run(over_rpc(state, tmp, state, first=(r == 0) or not quick)))
        print_table(n, reps, ip, rpc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def print_table(n: int, reps: int, ip: list[dict], rpc: list[dict]) -> None:
    def s(x):
        return "n/a" if x is None else (f"{x * 1e3:,.0f} ms" if x >= 0.01 else f"{x * 1e3:,.2f} ms")

    def mb(x):
        return "n/a" if x is None else f"{x:,.0f} MB"

    rows = [
        ("reopen (cold open)", "open", "open", s, TARGETS["reopen"]),
        ("get_branch, whole branch", "get_branch", "get_branch", s, TARGETS["get_branch"]),
        ("get_branch, tail 100 newest first", "tail", "tail", s, None),
        ("render whole branch, cold cache", "render_cold", "render_cold", s, TARGETS["render"]),
        ("render whole branch, warm cache", "render_warm", "render_warm", s, TARGETS["render"]),
        ("RSS added by opening", "rss_open", "rss_open", mb, TARGETS["rss"]),
        ("RSS after get_branch + render", "rss_after", "rss_after", mb, None),
    ]
    print(f"big session: {n:,} nodes on one branch ({med(ip, 'bytes') or 0:,.0f} bytes of node JSON), "
          f"median of {reps} run(s); RPC = real daemon over its Unix socket, client decode included")
    print(f"{'measure':<36} {'in-process':>12} {'over RPC':>12} {'RPC/in-proc':>12} {'target (RPC)':>13}")
    for name, ki, kr, fmt, target in rows:
        a, b = med(ip, ki), med(rpc, kr)
        ratio = f"{b / a:.2f}x" if a and b is not None else "n/a"
        tgt = ""
        if target is not None and b is not None:
            unit = "MB" if fmt is mb else "s"
            ok = b <= (target if unit == "MB" else target)
            tgt = f"<= {target:g} {unit} {'OK' if ok else 'MISSED'}"
        print(f"{name:<36} {fmt(a):>12} {fmt(b):>12} {ratio:>12} {tgt:>13}")


if __name__ == "__main__":
    raise SystemExit(main())
