"""The hostile-disk phase of the reliability campaign (issue 19, items 6, 8, 9): a real daemon,
sessions whose journal another writer damages while the daemon serves them (caller cycles,
repeated seqs and ids, records naming nodes that do not exist yet, lines that are not JSON,
unknown kinds), and sessions whose entries are swapped for symlinks to outside targets or FIFOs
while the daemon is stopped.

Counted: attempts; hangs (a call not answered within 30 s, or a SIGTERM that does not stop the
daemon: must be 0); writes acknowledged after the damage (must be 0: they would be unreadable);
acknowledged nodes lost (must be 0: every node acknowledged before the damage reads after a
restart); escapes (an outside target changed through a planted link: must be 0)."""

from __future__ import annotations

import os
import random
import signal
import sys
from typing import Any

import anyio

from campaign_support import cleanup, env_for, rss_kb, start_daemon
from sessiondag_client import connect_unix
from sessiondag_client.wire.errors import CorruptError, SessionResumeError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "store"))
from journal_plant import contents, last_node, node, plant, plant_link  # noqa: E402

TIMEOUT = 30


def _damage(kind: str, t: dict[str, Any], ids: list[str]) -> list[bytes]:
    seq = t["seq"]
    return {
        "caller cycle": [node(t, id="x1", seq=seq + 1, role="code", name="f", caller="x2", predecessor=None),
                         node(t, id="x2", seq=seq + 2, role="code", name="f", caller="x1", predecessor=None)],
        "repeated seq": [node(t, id="d1", seq=seq, caller=ids[0], predecessor=ids[0])],
        "repeated id": [node(t, seq=seq + 1)],
        "predecessor not yet": [node(t, id="p1", seq=seq + 1, predecessor="p2")],
        "not JSON": [b'{"a": {"id": "torn', node(t, id="n2", seq=seq + 1)],
        "unknown kind": [b'{"zz": 1}'],
        "update of nobody": [b'{"u": "ghost", "f": {"status": "error"}}'],
        "seq not a number": [node(t, id="s1", seq=str(seq + 1))],
    }[kind]


KINDS = ["caller cycle", "repeated seq", "repeated id", "predecessor not yet", "not JSON", "unknown kind",
         "update of nobody", "seq not a number"]
ENTRIES = ["lock", "journal.log", "session.json", "running", "git/objects/pack", "git/refs/heads", "git"]


async def _damaged_session(c: Any, sid: str, workdir: str, path: str, kind: str, rnd: random.Random,
                           out: dict[str, Any]) -> list[str]:
    """Acknowledged nodes, then the damage, then what must hold while the daemon serves it."""
    h = await c.open(sid, working_dir=workdir)
    ids: list[str] = []
    prev = "ROOT"
    for i in range(rnd.randint(2, 6)):
        n, _ = await c.append(h.id, {"role": "user", "name": "me", "output": f"n{i}", "predecessor": prev})
        ids.append(n.id)
        prev = n.id
        if rnd.random() < 0.3:
            await c.commit(h.id)
    out["acked"] += len(ids)
    plant(path, _damage(kind, last_node(os.path.join(path, "journal.log")), ids))
    try:
        with anyio.fail_after(TIMEOUT):
            await c.render(h.id)
            branch = [n.id for n in await c.get_branch(h.id)]
            if branch != ids:
                out["wrong_reads"] += 1
            for attempt in range(3):
                try:
                    n, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "after", "predecessor": prev})
                    out["acked_after_damage"] += 1
                except CorruptError:
                    out["refused"] += 1
            try:
                await c.commit(h.id)
                out["committed_after_damage"] += 1
            except CorruptError:
                pass
    except TimeoutError:
        out["hangs"] += 1
    return ids


def phase_disk_hostile(tmp: str, n_rounds: int, workdir: str, seed: int = 19) -> dict[str, Any]:
    rnd = random.Random(seed)
    state = os.path.join(tmp, "state-disk-hostile")
    outside = os.path.join(tmp, "outside")
    os.makedirs(outside, exist_ok=True)
    env = env_for(tmp)
    out: dict[str, Any] = {"phase": "hostile disk: damaged journals, planted links", "rounds": n_rounds,
                           "acked": 0, "lost": 0, "hangs": 0, "acked_after_damage": 0, "committed_after_damage": 0,
                           "refused": 0, "wrong_reads": 0, "links": 0, "links_refused": 0, "escapes": 0}
    acked: dict[str, list[str]] = {}
    d = start_daemon(state, env)
    rss0 = rss_kb(d.proc.pid)

    async def damage_all() -> None:
        c = await connect_unix(d.socket)
        try:
            for i in range(n_rounds):
                sid = f"dmg-{i}"
                path = os.path.join(state, "sessions", sid)
                acked[sid] = await _damaged_session(c, sid, workdir, path, KINDS[i % len(KINDS)], rnd, out)
        finally:
            await c.aclose()
    anyio.run(damage_all)
    rss1 = rss_kb(d.proc.pid)
    try:
        if d.stop(signal.SIGTERM, timeout=TIMEOUT) != 0:
            out["hangs"] += 1  # (a daemon that ignores SIGTERM raises here: a hang too)
    except Exception:
        out["hangs"] += 1
        d.proc.kill()
        d.proc.wait()
    targets = {}
    for i, sid in enumerate(sorted(acked)[: max(1, n_rounds // 2)]):
        entry = ENTRIES[i % len(ENTRIES)]
        target = os.path.join(outside, f"{sid}-{entry.replace('/', '_')}")
        plant_link(os.path.join(state, "sessions", sid), entry, target)
        targets[sid] = (target, contents(target))
    out["links"] = len(targets)
    d2 = start_daemon(state, env)

    async def reopen_all() -> None:
        c = await connect_unix(d2.socket)
        try:
            for sid, ids in acked.items():
                try:
                    with anyio.fail_after(TIMEOUT):
                        h = await c.open(sid, working_dir=workdir)
                        have = {n.id for n in await c.get_branch(h.id)}
                        out["lost"] += sum(1 for i in ids if i not in have)
                except SessionResumeError as e:
                    if sid in targets and e.reason == "corrupt":
                        out["links_refused"] += 1
                    else:
                        out["lost"] += len(ids)
                except TimeoutError:
                    out["hangs"] += 1
        finally:
            await c.aclose()
    anyio.run(reopen_all)
    out["escapes"] = sum(1 for target, before in targets.values() if contents(target) != before)
    out["rss_kb"] = (rss0, rss1)
    try:
        d2.stop(signal.SIGTERM, timeout=TIMEOUT)
    except Exception:
        out["hangs"] += 1
    cleanup()
    return out
