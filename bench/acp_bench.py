"""What the ACP adapter costs on top of the daemon: `python bench/acp_bench.py [--quick]`.

One daemon (scripted provider, a 200-character answer streamed in 16-character deltas) serves both
paths on one state dir: the Python client calling `agent/prompt` directly, and `sessiondag acp`
driven by the ACP Python SDK's client over pipes. Prints p50/p90 per prompt turn, the ratio, the
time to replay a session on `session/load` against a plain `session/get_branch`, and the start-up of
`sessiondag acp` (spawn → initialize answered)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ANSWER = "x" * 200


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def run(n: int) -> list[tuple[str, float, float]]:
    import acp
    from acp.schema import ClientCapabilities
    from sessiondag_client import connect

    tmp = Path(tempfile.mkdtemp(prefix="acp-bench-"))
    os.environ["XDG_RUNTIME_DIR"] = str(tmp / "run")
    (tmp / "run").mkdir(mode=0o700)
    work = tmp / "work"
    work.mkdir()
    script = tmp / "script.yaml"
    script.write_text(json.dumps([{"repeat": True, "text": ANSWER}]))
    env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script))
    os.environ.update(env)
    rows = []
    c = await connect(state_dir=str(tmp / "state"), auto_start=True)
    try:
        h = await c.open(working_dir=str(work))
        direct = []
        for _ in range(n):
            t = time.perf_counter()
            await c.agent_prompt(session_id=h.id, content="go")
            direct.append(time.perf_counter() - t)
        rows.append(("prompt turn, daemon agent/prompt", pct(direct, .5), pct(direct, .9)))

        class Quiet:
            async def session_update(self, session_id, update, **kw):
                pass

            async def request_permission(self, *a, **kw):
                raise RuntimeError("no permissions in this bench")

        cmd = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "acp",
               "--state-dir", str(tmp / "state")]
        starts = []
        for _ in range(3 if n < 50 else 5):
            t = time.perf_counter()
            async with acp.spawn_agent_process(Quiet(), cmd[0], *cmd[1:], env=env,
                                               transport_kwargs={"stderr": asyncio.subprocess.DEVNULL}) as (conn, _):
                await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
                starts.append(time.perf_counter() - t)
        async with acp.spawn_agent_process(Quiet(), cmd[0], *cmd[1:], env=env, use_unstable_protocol=True,
                                           transport_kwargs={"stderr": asyncio.subprocess.DEVNULL}) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
            sid = (await conn.new_session(cwd=str(work), mcp_servers=[])).session_id
            via = []
            for _ in range(n):
                t = time.perf_counter()
                await conn.prompt(session_id=sid, prompt=[acp.text_block("go")])
                via.append(time.perf_counter() - t)
            rows.append(("prompt turn, sessiondag acp", pct(via, .5), pct(via, .9)))
            loads, branches = [], []
            for _ in range(5):
                t = time.perf_counter()
                await conn.load_session(cwd=str(work), session_id=sid, mcp_servers=[])
                loads.append(time.perf_counter() - t)
                t = time.perf_counter()
                await c.get_branch(sid)
                branches.append(time.perf_counter() - t)
            rows.append((f"session/get_branch ({n} turns), daemon", pct(branches, .5), pct(branches, .9)))
            rows.append((f"session/load replay ({n} turns), acp", pct(loads, .5), pct(loads, .9)))
        rows.append(("sessiondag acp start (spawn → initialize)", statistics.median(starts), max(starts)))
        return rows
    finally:
        pid = json.loads((tmp / "state" / "daemon.pid").read_text())["pid"]
        await c.aclose()
        os.kill(pid, signal.SIGTERM)


def main(argv: list[str]) -> None:
    n = 10 if "--quick" in argv else 40
    rows = asyncio.run(run(n))
    print(f"{'path':<46} {'p50 ms':>9} {'p90 ms':>9}")
    for name, p50, p90 in rows:
        print(f"{name:<46} {p50 * 1e3:>9.1f} {p90 * 1e3:>9.1f}")
    d = dict((r[0], r[1]) for r in rows)
    print(f"\nACP prompt turn / direct agent/prompt (p50): "
          f"{d['prompt turn, sessiondag acp'] / d['prompt turn, daemon agent/prompt']:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
