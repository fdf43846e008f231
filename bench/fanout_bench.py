"""Fan-out of a running turn to watchers: one agent/prompt (scripted provider, a 16 KB answer streamed
in ~1,000 text deltas) with 0, 1 and 10 other clients subscribed to the session, each reading every
agent/did_update. Prints the prompt's wall time, the daemon's CPU time per prompt (utime+stime from
/proc) and the ratio to no watcher, medians over the rounds.

    python bench/fanout_bench.py [--quick]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import anyio

ANSWER = ("The quick brown fox jumps over the lazy dog. " * 400)[:16000]


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _round(sock: str, sid: str, watchers: list, pid: int) -> tuple[float, float, int]:
    from sessiondag_client import connect
    c = await connect(sock)
    got = [0] * len(watchers)
    try:
        async with anyio.create_task_group() as tg:
            async def drain(i: int, w) -> None:
                async for msg in w.notifications():
                    if msg.get("method") == "agent/did_update":
                        got[i] += 1
                        if msg["params"]["kind"] == "turn_committed":
                            return
            for i, w in enumerate(watchers):
                tg.start_soon(drain, i, w)
            cpu0, t0 = _cpu(pid), time.perf_counter()
            await c.call("agent/prompt", {"session_id": sid, "content": "write it"})
            wall = time.perf_counter() - t0
        cpu = _cpu(pid) - cpu0  # includes delivering to every watcher (they finished reading)
    finally:
        await c.aclose()
    return wall, cpu, min(got) if got else 0


async def _bench(rounds: int) -> list[tuple]:
    from sessiondag_client import connect
    home = tempfile.mkdtemp(prefix="sd-fanout-")
    work = tempfile.mkdtemp(prefix="sd-fanout-work-")
    script = os.path.join(home, "script.yaml")
    with open(script, "w") as f:
        f.write("- text: " + repr(ANSWER).replace("'", '"') + "\n  repeat: true\n")
    sock = os.path.join(home, "d.sock")
    env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=script)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())",
                             "serve", "--socket", sock, "--state-dir", home], env=env, stderr=subprocess.PIPE, text=True)
    try:
        while "ready" not in proc.stderr.readline():
            pass
        rows = []
        setup = await connect(sock)
        sid = (await setup.call("session/open", {"working_dir": work}))["session_id"]
        await setup.aclose()
        for n in (0, 1, 10):
            watchers = [await connect(sock) for _ in range(n)]
            for w in watchers:
                await w.subscribe(sid)
            await _round(sock, sid, watchers, proc.pid)  # warm-up
            samples = [await _round(sock, sid, watchers, proc.pid) for _ in range(rounds)]
            for w in watchers:
                await w.aclose()
            rows.append((n, statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples),
                         samples[-1][2]))
        return rows
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main(flags: list[str]) -> None:
    rounds = 3 if "--quick" in flags else 7
    rows = anyio.run(_bench, rounds)
    base_wall, base_cpu = rows[0][1], rows[0][2]
    print(f"agent/prompt streaming ~{len(ANSWER) // 16} text deltas; medians of {rounds} rounds")
    print(f"{'watchers':>8} {'wall ms':>9} {'x wall':>7} {'daemon cpu ms':>14} {'x cpu':>6} {'updates/watcher':>16}")
    for n, wall, cpu, per in rows:
        print(f"{n:>8} {wall * 1000:>9.1f} {wall / base_wall:>7.2f} {cpu * 1000:>14.1f} "
              f"{(cpu / base_cpu if base_cpu else float('nan')):>6.2f} {per:>16}")


if __name__ == "__main__":
    main(sys.argv[1:])
