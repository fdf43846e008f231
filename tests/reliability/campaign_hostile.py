"""The campaign's hostile phase: malformed frames of every kind, slow clients that stall mid-frame,
and many concurrent clients; the daemon must answer throughout."""

from __future__ import annotations

import os
import random
from typing import Any

import anyio
import orjson

from campaign_support import env_for, fsck, rss_kb, start_daemon
from sessiondag.rpc.transports import connect_unix as raw_connect
from sessiondag_client import connect_unix


# --- hostile frames, slow and many clients --------------------------------------------------------------
def _hostile(rng: random.Random) -> tuple[bytes, bool]:
    """A frame and whether it breaks the connection (a bad header closes it)."""
    body_kinds = [
        lambda: b"{not json", lambda: b"[]", lambda: b"42", lambda: b'{"jsonrpc":"1.0","id":1,"method":"x"}',
        lambda: orjson.dumps({"jsonrpc": "2.0", "id": rng.randint(0, 1 << 60), "method": "session/append",
                              "params": {"session_id": "../" * rng.randint(1, 9), "node": {}}}),
        lambda: orjson.dumps({"jsonrpc": "2.0", "id": "x" * rng.randint(1, 5000), "method": "nope/" + "y" * 300}),
        lambda: orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/get_branch",
                              "params": {"session_id": rng.choice(["", "\0", "a" * 200, "ok"]), "head_id": 5}}),
        lambda: b'{"jsonrpc":"2.0","id":1,"method":"daemon/ping","params":' + b"[" * 300 + b"]" * 300 + b"}",
        lambda: orjson.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": {"a": 1}}}),
        lambda: bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200))),
    ]
    if rng.random() < 0.1:
        return rng.choice([b"Content-Length: -5\r\n\r\n", b"Content-Length: zz\r\n\r\n",
                           b"no colon here\r\n\r\n", b"Content-Length: 99999999999\r\n\r\n"]), True
    body = rng.choice(body_kinds)()
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body), False


def phase_hostile(tmp: str, frames: int, clients: int, workdir: str) -> dict[str, Any]:
    state = os.path.join(tmp, "hostile")
    d = start_daemon(state, env_for(tmp))
    rss0 = rss_kb(d.proc.pid)
    rng = random.Random(11)
    sent = broken = 0
    slow = []
    for _ in range(20):  # slow clients: a header, half a body, then nothing
        s = raw_connect(d.socket, timeout=10)
        s.sendall(b"Content-Length: 100\r\n\r\n{\"jsonrpc\":")
        slow.append(s)
    sock = raw_connect(d.socket, timeout=10)
    while sent < frames:
        data, breaks = _hostile(rng)
        try:
            sock.sendall(data)
        except OSError:
            breaks = True
        sent += 1
        if breaks:
            broken += 1
            sock.close()
            sock = raw_connect(d.socket, timeout=10)
        if sent % 500 == 0:  # drain answers now and then so the socket buffers never fill
            sock.close()
            sock = raw_connect(d.socket, timeout=10)
    sock.close()

    async def many() -> int:
        ok = 0

        async def one(i: int) -> None:
            nonlocal ok
            c = await connect_unix(d.socket)
            try:
                await c.ping()
                ok += 1
            finally:
                await c.aclose()
        async with anyio.create_task_group() as tg:
            for i in range(clients):
                tg.start_soon(one, i)
        async with await connect_unix(d.socket) as c:
            h = await c.open("after", working_dir=workdir)
            await c.append(h.id, {"role": "user", "name": "me", "output": "still fine", "predecessor": "ROOT"})
            st = await c.status()
            assert len(st["clients"]) <= 1 + len(slow)
        return ok
    rss_frames = rss_kb(d.proc.pid)
    ok = anyio.run(many)
    rss_first = rss_kb(d.proc.pid)
    ok2 = anyio.run(many)  # a second wave: memory must plateau, not grow per client
    rss_second = rss_kb(d.proc.pid)
    for s in slow:
        s.close()
    rss1 = rss_kb(d.proc.pid)
    alive = d.proc.poll() is None
    d.stop()
    checked, bad = fsck(state)
    return {"phase": f"{sent} hostile frames, 20 slow + {clients} concurrent clients", "rounds": sent,
            "broken_conns": broken, "concurrent_ok": min(ok, ok2), "alive": alive, "lost": 0,
            "rss_mb_frames/wave1/wave2": "/".join(f"{x / 1024:.1f}" for x in (rss_frames, rss_first, rss_second)),
            "fsck": f"{checked - bad}/{checked}", "fsck_bad": bad, "rss_kb": (rss0, rss1)}
