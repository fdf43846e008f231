"""The reliability campaign: real daemons, real faults, and what must hold after each of them.

Each phase returns a row of figures (docs/reliability.md prints them):
- kills: SIGKILL of the daemon under RPC writers (three on one session, one committing) and agent
  turns, then a restart; every acknowledged node must be on disk (`lost` must be 0), fsck clean.
- mixed: library writers (other processes, `SessionStore`) and RPC writers on one session.
- disk: a small tmpfs filled up (ENOSPC), then remounted read-only (EROFS); writes are refused,
  the daemon lives, nothing acknowledged is lost, and the session works once the cause is gone.
- fds: thousands of sessions under a low RLIMIT_NOFILE; fds stay bounded; a new client pings.
- hostile: malformed frames of every kind, slow clients that stall mid-frame, and many concurrent
  clients; the daemon answers throughout.
Daemon RSS is measured before and after each phase. The phases live in campaign.py (kills, mixed),
campaign_faults.py (disk, fds) and campaign_hostile.py; campaign_support.py holds what they share.

`rounds(normal, slow)` picks the normal-suite size or, with SESSIONDAG_SLOW=1, the campaign size.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

import anyio

from campaign_disk_hostile import phase_disk_hostile  # noqa: F401 - a phase of the campaign
from campaign_faults import phase_disk, phase_fds
from campaign_hostile import phase_hostile
from campaign_writers import phase_laggards, phase_writers
from campaign_support import cleanup, env_for, fsck, present, rounds, rss_kb, start_daemon
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

__all__ = ["cleanup", "phase_disk", "phase_fds", "phase_hostile", "phase_kills", "phase_laggards", "phase_mixed", "phase_writers", "rounds", "table"]


# --- SIGKILL under writers and agent turns ---------------------------------------------------------
def phase_kills(tmp: str, n_rounds: int, workdir: str) -> dict[str, Any]:
    state = os.path.join(tmp, "kills")
    env = env_for(tmp, SESSIONDAG_JOURNAL_ROTATE_BYTES="65536")
    acked: dict[str, set[str]] = {"shared": set(), "agent": set()}
    rng = random.Random(8)
    survived = turns = 0
    rss0 = rss1 = 0
    errors: dict[str, int] = {}
    for rnd in range(n_rounds):
        d = start_daemon(state, env)
        if rnd == 0:
            rss0 = rss_kb(d.proc.pid)
        target = rng.randint(3, 40)

        async def run() -> None:
            clients = [await connect_unix(d.socket) for _ in range(4)]
            for c in clients:  # the first open of each round also recovers what the kill left
                await c.open("shared", working_dir=workdir)
            await clients[3].open("agent", working_dir=workdir)
            st = {"n": 0, "turns": 0}

            async def writer(c, k):
                user = None
                i = 0
                while True:
                    if user is None:
                        u, _ = await c.append("shared", {"role": "code", "name": f"w{k}", "output": i})
                        user = u.id
                        acked["shared"].add(u.id)
                    n, _ = await c.append("shared", {"role": "code", "name": f"w{k}-{i}", "output": i,
                                                     "caller": user})
                    acked["shared"].add(n.id)
                    st["n"] += 1
                    if k == 0 and i % 7 == 6:
                        await c.commit("shared")
                    i += 1

            async def agent(c):
                while True:
                    r = await c.agent_prompt(session_id="agent", content=f"turn {rnd}")
                    acked["agent"].update(x for x in (r.get("user_node_id"), r.get("head_id")) if x)
                    st["turns"] += 1
                    nonlocal turns
                    turns += 1

            async def killer():
                # even rounds: after a finished agent turn (kill between turns or early in the next);
                # odd rounds: as soon as the writers reached the target (usually mid-turn)
                with anyio.fail_after(120):
                    while st["n"] < target or (rnd % 2 == 0 and st["turns"] < 1):
                        await anyio.sleep(0.002)
                d.proc.send_signal(signal.SIGKILL)
            try:
                async with anyio.create_task_group() as tg:
                    for k in range(3):
                        tg.start_soon(writer, clients[k], k)
                    tg.start_soon(agent, clients[3])
                    await killer()
            except BaseException as e:  # the connections break when the daemon dies: expected
                for leaf in _leaves(e):
                    errors[type(leaf).__name__] = errors.get(type(leaf).__name__, 0) + 1
            finally:
                for c in clients:
                    with anyio.CancelScope(shield=True):
                        try:
                            await c.aclose()
                        except Exception:  # noqa: BLE001
                            pass
        anyio.run(run)
        d.proc.wait(30)
        survived += 1
    d = start_daemon(state, env)  # the last restart: everything opens
    rss1 = rss_kb(d.proc.pid)

    async def final() -> None:
        async with await connect_unix(d.socket) as c:
            for sid in acked:
                await c.open(sid, working_dir=workdir)
                await c.commit(sid)
    anyio.run(final)
    d.stop()
    checked, bad = fsck(state)
    store = SessionStore(state)  # informational: llm nodes a kill left `running` (issue #8 item 2)
    running = sum(1 for c in store.session("agent").graph.nodes.values() if c.status == "running")
    store.close()
    return {"phase": "SIGKILL under 3 RPC writers + agent turns", "rounds": n_rounds, "kills_survived": survived,
            "acked": sum(map(len, acked.values())), "lost": present(state, acked), "fsck": f"{checked - bad}/{checked}",
            "fsck_bad": bad, "rss_kb": (rss0, rss1), "agent_turns_done": turns, "left_running": running}


def _leaves(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [x for sub in e.exceptions for x in _leaves(sub)]
    return [e]


# --- library and RPC writers on one session ----------------------------------------------------------
LIB_WRITER = """
import sys
from sessiondag import Call
from sessiondag.store import SessionStore
store = SessionStore(sys.argv[1])
s = store.session("mixed")
for i in range(int(sys.argv[2])):
    c = s.append(Call("code", f"lib-{sys.argv[3]}-{i}", output=i))
    print(c.id, flush=True)
    if i % 25 == 24:
        s.commit_turn()
store.close()
"""


def phase_mixed(tmp: str, n: int, workdir: str) -> dict[str, Any]:
    state = os.path.join(tmp, "mixed")
    d = start_daemon(state, env_for(tmp))
    rss0 = rss_kb(d.proc.pid)
    acked: set[str] = set()

    async def run() -> None:
        cs = [await connect_unix(d.socket) for _ in range(2)]
        await cs[0].open("mixed", working_dir=workdir)
        await cs[0].subscribe("mixed")
        libs = [subprocess.Popen([sys.executable, "-c", LIB_WRITER, state, str(n), str(k)], stdout=subprocess.PIPE,
                                 text=True) for k in range(2)]

        async def rpc(c, k):
            for i in range(n):
                node, _ = await c.append("mixed", {"role": "code", "name": f"rpc-{k}-{i}", "output": i})
                acked.add(node.id)
                if i % 25 == 24:
                    await c.commit("mixed")
        async with anyio.create_task_group() as tg:
            for k, c in enumerate(cs):
                tg.start_soon(rpc, c, k)
        for p in libs:
            out, _ = await anyio.to_thread.run_sync(p.communicate)
            assert p.returncode == 0
            acked.update(out.split())
        for c in cs:
            await c.aclose()
    anyio.run(run)
    rss1 = rss_kb(d.proc.pid)
    d.stop()
    store = SessionStore(state)
    g = store.session("mixed").graph
    seqs = [c.seq for c in g.nodes.values()]
    dup = len(seqs) - len(set(seqs))
    store.close()
    checked, bad = fsck(state)
    return {"phase": "2 library + 2 RPC writers on one session", "rounds": n, "acked": len(acked),
            "lost": present(state, {"mixed": acked}), "duplicate_seq": dup, "fsck": f"{checked - bad}/{checked}",
            "fsck_bad": bad, "rss_kb": (rss0, rss1)}


def table(rows: list[dict[str, Any]]) -> str:
    out = [f"{'phase':<52} {'rounds':>7} {'acked':>7} {'lost':>5} {'fsck':>7}  {'RSS MB before→after':>20}  notes"]
    for r in rows:
        a, b = r["rss_kb"]
        notes = ", ".join(f"{k}={v}" for k, v in r.items()
                          if k not in ("phase", "rounds", "acked", "lost", "fsck", "fsck_bad", "rss_kb", "codes_by_stage"))
        out.append(f"{r['phase']:<52} {r['rounds']:>7} {r.get('acked', '-'):>7} {r['lost']:>5} {r.get('fsck', '-'):>7}"
                   f"  {a / 1024:>8.1f} → {b / 1024:>6.1f}  {notes}")
    return "\n".join(out)


def main() -> None:
    import tempfile
    tmp = tempfile.mkdtemp(prefix="sd-campaign-")
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    os.environ.setdefault("XDG_RUNTIME_DIR", os.path.join(tmp, "run"))
    os.makedirs(os.environ["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    rows = []
    t0 = time.monotonic()
    try:
        rows.append(phase_kills(tmp, rounds(3, 200), work))
        rows.append(phase_mixed(tmp, rounds(50, 400), work))
        rows.append(phase_writers(tmp, rounds(60, 540), work))
        rows.append(phase_laggards(tmp, rounds(400, 2500), work))
        rows.append(phase_disk(tmp, rounds(20, 200), work))
        rows.append(phase_fds(tmp, rounds(300, 2000), work))
        rows.append(phase_hostile(tmp, rounds(2000, 12000), rounds(100, 1000), work))
        rows.append(phase_disk_hostile(tmp, rounds(16, 400), work))
    finally:
        cleanup()
    print(table(rows))
    print(f"wall {time.monotonic() - t0:.0f} s")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
