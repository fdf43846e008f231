"""RPC benchmark: round-trip latency (p50/p99) and throughput with 1 and 100 requests in flight.

Servers, all started as subprocesses and driven by the same asyncio + orjson client:
  sessiondag daemon over its Unix socket and over stdio (daemon/ping = the trivial method, and
  session/append of a 256-byte code node), a stock pygls 2.1 `JsonRPCServer` echo (stdio and TCP:
  pygls has no Unix-socket transport), and a raw asyncio + orjson echo (Unix socket and stdio) as
  the floor. Plus the in-process durable append rate of the store for the same nodes.

    python bench/rpc_bench.py [--quick]
    python bench/rpc_bench.py --before DIR [--after DIR] [--rounds N] [--quick]

`--before DIR` compares this tree's daemon with the one of another checkout (e.g. `git archive main |
tar -x -C DIR`), same machine, same run: the sessiondag rows only, the two daemons measured in turn
for N rounds (default 5), each first every other round; medians and the ratio after/before.
`--after DIR` measures another checkout instead of this tree.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import orjson

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOAD = "x" * 256

PYGLS_ECHO = r"""
import sys
from pygls.server import JsonRPCServer
from pygls.protocol import JsonRPCProtocol, default_converter
server = JsonRPCServer(JsonRPCProtocol, default_converter)
@server.feature("echo")
def echo(params):
    return params
if sys.argv[1] == "stdio":
    server.start_io()
else:
    server.start_tcp("127.0.0.1", int(sys.argv[2]))
"""

RAW_ECHO = r"""
import asyncio, os, sys, orjson
async def serve(reader, writer):
    loads, dumps = orjson.loads, orjson.dumps
    while True:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            break
        n = int(head.split(b":")[1].split(b"\r\n")[0])
        msg = loads(await reader.readexactly(n))
        body = dumps({"jsonrpc": "2.0", "id": msg["id"], "result": msg.get("params")})
        writer.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
async def main():
    loop = asyncio.get_running_loop()
    if sys.argv[1] == "stdio":
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", 0))
        wt, wp = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", 0))
        await serve(reader, asyncio.StreamWriter(wt, wp, reader, loop))
    else:
        srv = await asyncio.start_unix_server(serve, sys.argv[2])
        print("ready", file=sys.stderr, flush=True)
        await srv.serve_forever()
asyncio.run(main())
"""


class Client:
    """Minimal pipelining JSON-RPC client over asyncio streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer
        self.ids = 0
        self.waiting: dict[int, asyncio.Future] = {}
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        r = self.reader
        while True:
            head = await r.readuntil(b"\r\n\r\n")
            n = int(head.split(b":")[1].split(b"\r\n")[0])
            msg = orjson.loads(await r.readexactly(n))
            fut = self.waiting.pop(msg.get("id"), None)
            if fut is not None:
                fut.set_result(msg)

    def send(self, method: str, params: dict) -> asyncio.Future:
        self.ids += 1
        fut = asyncio.get_running_loop().create_future()
        self.waiting[self.ids] = fut
        body = orjson.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        self.writer.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        return fut

    async def call(self, method: str, params: dict) -> dict:
        msg = await self.send(method, params)
        if "error" in msg:
            raise RuntimeError(msg["error"])
        return msg["result"]

    async def close(self) -> None:
        self.task.cancel()
        self.writer.close()


async def run_load(c: Client, method: str, params_fn, n: int, inflight: int) -> dict:
    lat: list[float] = []
    sem = asyncio.Semaphore(inflight)

    async def one(i: int) -> None:
        async with sem:
            t = time.perf_counter()
            msg = await c.send(method, params_fn(i))
            lat.append(time.perf_counter() - t)
            if "error" in msg:
                raise RuntimeError(msg["error"])
    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    dt = time.perf_counter() - t0
    lat.sort()
    return {"p50": lat[len(lat) // 2] * 1e6, "p99": lat[int(len(lat) * 0.99) - 1] * 1e6, "rps": n / dt}


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


async def _spawn_stdio(argv: list[str], env: dict | None = None):
    proc = await asyncio.create_subprocess_exec(*argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                stderr=subprocess.DEVNULL, env=env)
    return proc, Client(proc.stdout, proc.stdin)


async def _wait_connect(opener, deadline: float = 20.0):
    end = time.monotonic() + deadline
    while True:
        try:
            return await opener()
        except OSError:
            if time.monotonic() > end:
                raise
            await asyncio.sleep(0.02)


def serve_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "serve", *args]


async def _socket_daemon(tmp: str, env: dict) -> tuple[subprocess.Popen, Client]:
    dsock = os.path.join(tmp, "d.sock")
    d = subprocess.Popen(serve_argv("--socket", dsock, "--state-dir", os.path.join(tmp, "state-sock")),
                         stderr=subprocess.PIPE, env=env)
    while b"ready" not in d.stderr.readline():
        pass
    return d, Client(*await asyncio.open_unix_connection(dsock))


def tree_env(env: dict, tree: str | None) -> dict:
    """`env` running the daemon of checkout `tree` (its daemon/ and clients/python/ first on the path)."""
    if tree is None:
        return env
    path = os.pathsep.join([os.path.join(tree, "daemon"), os.path.join(tree, "clients", "python")])
    return dict(env, PYTHONPATH=path)


async def bench_daemon(tree: str | None, quick: bool) -> dict[tuple, float]:
    """{(transport, method, in flight): p50 µs} of the daemon of `tree` (None: this one)."""
    n1, n100 = (400, 3000) if quick else (2000, 20000)
    na1, na100 = (300, 1500) if quick else (1500, 6000)
    tmp = tempfile.mkdtemp(prefix="sdbench-")
    env = tree_env(dict(os.environ, SESSIONDAG_HOME=os.path.join(tmp, "home"), XDG_RUNTIME_DIR=tmp), tree)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    out: dict[tuple, float] = {}
    node = lambda i: {"session_id": "bench", "node": {"role": "code", "name": "tool", "output": PAYLOAD}}  # noqa: E731

    async def run(transport: str, c: Client) -> None:
        await c.call("session/open", {"session_id": "bench", "working_dir": work})
        for method, params_fn, k1, k100 in (("daemon/ping", lambda i: {}, n1, n100), ("session/append", node, na1, na100)):
            await run_load(c, method, params_fn, 50, 1)  # warm-up
            for inflight, n in ((1, k1), (100, k100)):
                out[(transport, method, inflight)] = (await run_load(c, method, params_fn, n, inflight))["p50"]
    d, c = await _socket_daemon(tmp, env)
    await run("unix", c)
    await c.close()
    d.terminate()
    d.wait()
    proc, c = await _spawn_stdio(serve_argv("--stdio", "--state-dir", os.path.join(tmp, "state-stdio")), env)
    await run("stdio", c)
    await c.close()
    proc.terminate()
    await proc.wait()
    subprocess.run(["rm", "-rf", tmp])
    return out


def compare(before: str, rounds: int, quick: bool, after: str | None = None) -> None:
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(rounds):  # in turn, each first every other round: the machine's load and the disk's
        # state after the previous run's cleanup fall on both alike
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            runs[side].append(asyncio.run(bench_daemon(before if side == "before" else after, quick)))
    print(f"sessiondag daemon p50 (µs), median of {rounds} rounds, before = {before}, after = {after or 'this tree'}")
    print(f"{'transport':<9} {'method':<16} {'in flight':>9} {'before':>9} {'after':>9} {'after/before':>13}")
    ratios = []
    for key in runs["after"][0]:
        b = statistics.median(r[key] for r in runs["before"])
        a = statistics.median(r[key] for r in runs["after"])
        ratios.append(a / b)
        print(f"{key[0]:<9} {key[1]:<16} {key[2]:>9} {b:>9.0f} {a:>9.0f} {a / b:>13.2f}")
    print(f"\nmedian ratio after/before: {statistics.median(ratios):.2f} (target <= 1.10)")
    print(params_cost())


def params_cost() -> str:
    """What checking the params against rpc_schema costs a request, in-process (quiet-machine proof
    of what the round-trip table shows through the noise)."""
    from sessiondag.rpc import params
    node = {"session_id": "bench", "node": {"role": "code", "name": "tool", "output": PAYLOAD}}
    out = []
    for method, p in (("daemon/ping", {}), ("session/append", node)):
        check, n = params.compiled()[method].check, 20000
        times = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(n):
                check(p)
            times.append((time.perf_counter() - t) / n * 1e6)
        out.append(f"{method} {statistics.median(times):.1f} µs")
    return "params check per request (in-process, median of 5 × 20,000): " + ", ".join(out)


async def bench_all(quick: bool) -> list[tuple]:
    n1, n100 = (400, 3000) if quick else (2000, 20000)
    na1, na100 = (300, 1500) if quick else (1500, 6000)
    rows: list[tuple] = []
    tmp = tempfile.mkdtemp(prefix="sdbench-")
    env = dict(os.environ, SESSIONDAG_HOME=os.path.join(tmp, "home"), XDG_RUNTIME_DIR=tmp)
    work = os.path.join(tmp, "work")
    os.makedirs(work)

    async def measure(name: str, c: Client, method: str, params_fn, n1_: int, n100_: int) -> None:
        await run_load(c, method, params_fn, 50, 1)  # warm-up
        for inflight, n in ((1, n1_), (100, n100_)):
            r = await run_load(c, method, params_fn, n, inflight)
            rows.append((name, method, inflight, r["p50"], r["p99"], r["rps"]))

    empty = lambda i: {}  # noqa: E731
    echo = empty  # the same empty-object request for the references and for daemon/ping

    # --- raw floor ------------------------------------------------------------------------------
    sock = os.path.join(tmp, "raw.sock")
    raw = subprocess.Popen([sys.executable, "-c", RAW_ECHO, "unix", sock], stderr=subprocess.PIPE)
    raw.stderr.readline()
    c = Client(*await asyncio.open_unix_connection(sock))
    await measure("raw asyncio+orjson echo / unix", c, "echo", echo, n1, n100)
    await c.close()
    raw.terminate()
    proc, c = await _spawn_stdio([sys.executable, "-c", RAW_ECHO, "stdio"])
    await measure("raw asyncio+orjson echo / stdio", c, "echo", echo, n1, n100)
    await c.close()
    proc.terminate()

    # --- stock pygls ------------------------------------------------------------------------------
    proc, c = await _spawn_stdio([sys.executable, "-c", PYGLS_ECHO, "stdio"])
    await measure("stock pygls echo / stdio", c, "echo", echo, n1, max(n100 // 4, 500))
    await c.close()
    proc.terminate()
    port = _free_port()
    pg = subprocess.Popen([sys.executable, "-c", PYGLS_ECHO, "tcp", str(port)], stderr=subprocess.DEVNULL)
    c = Client(*await _wait_connect(lambda: asyncio.open_connection("127.0.0.1", port)))
    await measure("stock pygls echo / tcp", c, "echo", echo, n1, max(n100 // 4, 500))
    await c.close()
    pg.terminate()

    # --- sessiondag (in-process appends measured right before and after each append run) --------
    node = lambda i: {"session_id": "bench", "node": {"role": "code", "name": "tool", "output": PAYLOAD}}  # noqa: E731
    d, c = await _socket_daemon(tmp, env)
    await c.call("session/open", {"session_id": "bench", "working_dir": work})
    await measure("sessiondag / unix", c, "daemon/ping", empty, n1, n100)
    ref = [inprocess_appends(os.path.join(tmp, "state-inproc-u1"), work, na1)]
    await measure("sessiondag / unix", c, "session/append", node, na1, na100)
    ref.append(inprocess_appends(os.path.join(tmp, "state-inproc-u2"), work, na1))
    rows.append(("in-process store (unix run)", "Session.append", 1, (ref[0][0] + ref[1][0]) / 2,
                 max(ref[0][1], ref[1][1]), (ref[0][2] + ref[1][2]) / 2))
    await c.close()
    d.terminate()
    d.wait()
    proc, c = await _spawn_stdio(serve_argv("--stdio", "--state-dir", os.path.join(tmp, "state-stdio")), env)
    await c.call("session/open", {"session_id": "bench", "working_dir": work})
    await measure("sessiondag / stdio", c, "daemon/ping", empty, n1, n100)
    ref = [inprocess_appends(os.path.join(tmp, "state-inproc-s1"), work, na1)]
    await measure("sessiondag / stdio", c, "session/append", node, na1, na100)
    ref.append(inprocess_appends(os.path.join(tmp, "state-inproc-s2"), work, na1))
    rows.append(("in-process store (stdio run)", "Session.append", 1, (ref[0][0] + ref[1][0]) / 2,
                 max(ref[0][1], ref[1][1]), (ref[0][2] + ref[1][2]) / 2))
    await c.close()
    proc.terminate()
    await proc.wait()

    subprocess.run(["rm", "-rf", tmp])
    return rows


def inprocess_appends(path: str, work: str, n: int) -> tuple[float, float, float]:
    """(p50 µs, p99 µs, appends/s) of durable Session.append for the benchmark's node, in-process."""
    from sessiondag import Call
    from sessiondag.store import SessionStore
    store = SessionStore(path)
    s = store.session(store.open_session("bench", working_dir=work).id)
    for _ in range(50):
        s.append(Call("code", "tool", output=PAYLOAD))
    lat = []
    t0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        s.append(Call("code", "tool", output=PAYLOAD))
        lat.append(time.perf_counter() - t)
    dt = time.perf_counter() - t0
    lat.sort()
    store.close()
    return lat[len(lat) // 2] * 1e6, lat[int(len(lat) * .99) - 1] * 1e6, n / dt


async def interleaved_appends(c: Client, path: str, work: str, n: int) -> dict:
    """1-in-flight session/append over RPC (client `c`, session "bench") and durable in-process
    Session.append of the same node (a store at `path`), one of each in turn, so that a shared disk's
    time-varying load (its fdatasync p90 moves between 0.5 and 6 ms here) falls on both alike:
    {"rpc"/"inproc"/"ping": {"p50" µs, "rps"}}, each rate from the sum of its own calls' times ("ping":
    daemon/ping 1 in flight after the appends, the round trip without the append)."""
    from sessiondag import Call
    from sessiondag.store import SessionStore
    store = SessionStore(path)
    s = store.session(store.open_session("bench", working_dir=work).id)
    params = {"session_id": "bench", "node": {"role": "code", "name": "tool", "output": PAYLOAD}}
    lat: dict[str, list[float]] = {"rpc": [], "inproc": []}
    try:
        for i in range(n + 50):  # the first 50 of each warm up
            t = time.perf_counter()
            s.append(Call("code", "tool", output=PAYLOAD))
            t1 = time.perf_counter()
            await c.call("session/append", params)
            t2 = time.perf_counter()
            if i >= 50:
                lat["inproc"].append(t1 - t)
                lat["rpc"].append(t2 - t1)
        lat["ping"] = []
        for i in range(min(n, 300)):  # the round trip alone, after: what an append adds to it
            t = time.perf_counter()
            await c.call("daemon/ping", {})
            lat["ping"].append(time.perf_counter() - t)
    finally:
        store.close()
    return {k: {"p50": sorted(v)[len(v) // 2] * 1e6, "rps": len(v) / sum(v)} for k, v in lat.items()}


def verdict(rows: list[tuple]) -> list[str]:
    get = lambda name, method, k: next(r for r in rows if r[0] == name and r[1] == method and r[2] == k)  # noqa: E731
    out = []
    ours_u, ours_s = get("sessiondag / unix", "daemon/ping", 1), get("sessiondag / stdio", "daemon/ping", 1)
    pyg_t, pyg_s = get("stock pygls echo / tcp", "echo", 1), get("stock pygls echo / stdio", "echo", 1)
    raw_u, raw_s = get("raw asyncio+orjson echo / unix", "echo", 1), get("raw asyncio+orjson echo / stdio", "echo", 1)
    out.append(f"trivial p50 vs stock pygls: unix/tcp {ours_u[3] / pyg_t[3]:.2f}x, stdio {ours_s[3] / pyg_s[3]:.2f}x   (target <= 0.5x)")
    out.append(f"trivial p50 vs raw floor:  unix {ours_u[3] / raw_u[3]:.2f}x, stdio {ours_s[3] / raw_s[3]:.2f}x   (target <= 2.5x)")
    t100u, t100s = get("sessiondag / unix", "daemon/ping", 100), get("sessiondag / stdio", "daemon/ping", 100)
    out.append(f"trivial req/s with 100 in flight: unix {t100u[5]:,.0f}, stdio {t100s[5]:,.0f}   (target >= 5,000)")
    for tr in ("unix", "stdio"):
        inproc = get(f"in-process store ({tr} run)", "Session.append", 1)[5]
        a1, a100 = get(f"sessiondag / {tr}", "session/append", 1)[5], get(f"sessiondag / {tr}", "session/append", 100)[5]
        out.append(f"appends over RPC / in-process ({inproc:,.0f}/s around it), {tr}: 1 in flight {a1 / inproc:.2f}x, "
                   f"100 in flight {a100 / inproc:.2f}x   (target >= 0.7x)")
    return out


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--before" in argv:
        rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 5
        after = argv[argv.index("--after") + 1] if "--after" in argv else None
        compare(argv[argv.index("--before") + 1], rounds, "--quick" in argv, after)
        return
    rows = asyncio.run(bench_all("--quick" in argv))
    print(f"{'server / transport':<34} {'method':<16} {'in flight':>9} {'p50 µs':>9} {'p99 µs':>9} {'req/s':>10}")
    for name, method, k, p50, p99, rps in rows:
        print(f"{name:<34} {method:<16} {k:>9} {p50:>9.0f} {p99:>9.0f} {rps:>10,.0f}")
    print()
    for line in verdict(rows):
        print(line)


if __name__ == "__main__":
    main()
