"""The several-writers phase of the reliability campaign (issue 19 item 11): three library writer
processes and three RPC writers append to one session whose journal rotates every 64 KiB, while a
daemon subscriber listens. What must hold: no write is refused as `session_deleted` (nobody deleted
the session: a rotation replaced the journal file), and the subscriber hears every acknowledged
append, or a `reload` change after which it re-reads the session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import anyio

from campaign_support import env_for, fsck, present, rss_kb, start_daemon
from sessiondag_client import connect_unix
from sessiondag_client.errors import RpcError, SessionDagError

ROTATE = 65536
PAD = "x" * 1500      # each node's output: a journal line of ~1.6 KB, so the journal rotates every ~40 appends

LIB_WRITER = """
import json, sys
from sessiondag import Call
from sessiondag.core.errors import SessionDagError
from sessiondag.store import SessionStore
state, n, k, pad = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
store = SessionStore(state)
s = store.session("shared")
errors = {}
for i in range(n):
    try:
        c = s.append(Call("code", f"lib-{k}-{i}", output=pad))
        print(c.id, flush=True)
        if i % 10 == 9:
            s.commit_turn()
    except SessionDagError as e:
        errors[e.code] = errors.get(e.code, 0) + 1
        store.release("shared")
        s = store.session("shared")
store.close()
print(json.dumps(errors), flush=True)
"""


def phase_writers(tmp: str, n: int, workdir: str) -> dict[str, Any]:
    state = os.path.join(tmp, "writers")
    env = env_for(tmp, SESSIONDAG_JOURNAL_ROTATE_BYTES=str(ROTATE))  # the daemon's and the libraries' setting
    d = start_daemon(state, env)
    rss0 = rss_kb(d.proc.pid)
    acked: set[str] = set()
    seen: set[str] = set()
    errors: dict[str, int] = {}
    st = {"reloads": 0, "notes": 0, "marker": None, "marker_seen": anyio.Event()}

    def count(code: str) -> None:
        errors[code] = errors.get(code, 0) + 1

    async def run() -> None:
        sub = await connect_unix(d.socket)
        await sub.open("shared", working_dir=workdir)
        await sub.subscribe("shared")
        cs = [await connect_unix(d.socket) for _ in range(3)]
        for c in cs:
            await c.open("shared", working_dir=workdir)
        libs = [subprocess.Popen([sys.executable, "-c", LIB_WRITER, state, str(n), str(k), PAD],
                                 stdout=subprocess.PIPE, text=True, env=env) for k in range(3)]

        async def listen() -> None:
            async for note in sub.notifications():
                if note.get("method") != "session/did_change":
                    continue
                st["notes"] += 1
                for ch in note["params"]["changes"]:
                    if ch["kind"] == "append":
                        seen.add(ch["node"]["id"])
                    elif ch["kind"] == "reload":  # the client re-reads what it caches
                        st["reloads"] += 1
                        try:  # every node hangs under ROOT in the call tree
                            tree = await sub.view("shared", "tree")
                            seen.update(i for k in tree["children"] for i in k.get("ids", [k["id"]]))
                        except SessionDagError as e:
                            count(e.code)
                if st["marker"] in seen:
                    st["marker_seen"].set()

        async def rpc(c, k: int) -> None:
            for i in range(n):
                try:
                    node, _ = await c.append("shared", {"role": "code", "name": f"rpc-{k}-{i}", "output": PAD})
                    acked.add(node.id)
                    if i % 10 == 9:
                        await c.commit("shared")
                except SessionDagError as e:
                    count(e.code)
                except RpcError as e:
                    count(str(e.code))

        async with anyio.create_task_group() as tg:
            tg.start_soon(listen)
            async with anyio.create_task_group() as writers:
                for k, c in enumerate(cs):
                    writers.start_soon(rpc, c, k)
            for p in libs:
                out, _ = await anyio.to_thread.run_sync(p.communicate)
                assert p.returncode == 0
                *ids, errs = out.split("\n")[:-1]
                acked.update(ids)
                for code, k in json.loads(errs).items():
                    errors[code] = errors.get(code, 0) + k
            try:
                marker, _ = await cs[0].append("shared", {"role": "code", "name": "marker", "output": 0})
                st["marker"] = marker.id
                if marker.id in seen:
                    st["marker_seen"].set()
            except SessionDagError as e:  # the daemon buried the session: nothing more to hear
                count(e.code)
                st["marker_seen"].set()
            with anyio.fail_after(60):  # bounded: the subscriber heard the last write (or the phase fails)
                await st["marker_seen"].wait()
            tg.cancel_scope.cancel()
        for c in [sub, *cs]:
            await c.aclose()
    anyio.run(run)
    rss1 = rss_kb(d.proc.pid)
    d.stop()
    checked, bad = fsck(state)
    return {"phase": "3 library + 3 RPC writers, journal rotating at 64 KiB", "rounds": n, "acked": len(acked),
            "lost": present(state, {"shared": acked}), "errors": errors,
            "false_deleted": errors.get("session_deleted", 0), "missed": len(acked - seen),
            "reloads": st["reloads"], "fsck": f"{checked - bad}/{checked}", "fsck_bad": bad, "rss_kb": (rss0, rss1)}


# --- slow subscribers: one budget across clients ---------------------------------------------------
def _frame(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class RawSubscriber:
    """A client on a bare socket: subscribes, then reads nothing until `read_until_reload`."""

    def __init__(self, path: str, sid: str, workdir: str):
        import socket
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.s.sendall(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
                       + _frame({"jsonrpc": "2.0", "id": 2, "method": "session/open",
                                 "params": {"session_id": sid, "working_dir": workdir}})
                       + _frame({"jsonrpc": "2.0", "id": 3, "method": "session/subscribe", "params": {"session_id": sid}}))
        while self.next().get("id") != 3:
            pass

    def next(self) -> dict[str, Any]:
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        size = int(head.split(b":")[1])
        while len(rest) < size:
            self._more()
            head, _, rest = self.buf.partition(b"\r\n\r\n")
        self.buf = rest[size:]
        return json.loads(rest[:size])

    def _more(self) -> None:
        chunk = self.s.recv(1 << 20)
        assert chunk, "the daemon closed a slow subscriber's connection"
        self.buf += chunk

    def read_until_reload(self) -> tuple[int, bool]:
        """(appends heard, a reload came) reading what was queued, up to the first reload."""
        self.s.settimeout(60)  # bounded: the reload must come once we read
        appends = 0
        while True:
            m = self.next()
            for ch in (m.get("params") or {}).get("changes", ()) if m.get("method") == "session/did_change" else ():
                if ch["kind"] == "reload":
                    return appends, True
                appends += ch["kind"] == "append"


def phase_laggards(tmp: str, n_appends: int, workdir: str, n_subs: int = 12, size: int = 24_000) -> dict[str, Any]:
    state = os.path.join(tmp, "laggards")
    d = start_daemon(state, env_for(tmp))
    rss0 = rss_kb(d.proc.pid)
    out: dict[str, Any] = {}

    async def run() -> None:
        async with await connect_unix(d.socket) as c:
            await c.open("busy", working_dir=workdir)
            subs = [RawSubscriber(d.socket, "busy", workdir) for _ in range(n_subs)]
            body = "y" * size
            for i in range(n_appends):
                await c.append("busy", {"role": "code", "name": f"n{i}", "output": body})
            st = await c.status()
            out["figures"] = st["notifications"]
            out["rss_after_appends"] = rss_kb(d.proc.pid)
            heard = [await anyio.to_thread.run_sync(s.read_until_reload) for s in subs]
            out["reloaded"] = sum(1 for _, r in heard if r)
            out["heard_before_reload"] = min(a for a, _ in heard), max(a for a, _ in heard)
            out["after_catch_up"] = (await c.status())["notifications"]
            for s in subs:
                s.s.close()
    anyio.run(run)
    rss1 = rss_kb(d.proc.pid)
    d.stop()
    f = out["figures"]
    return {"phase": f"{n_subs} subscribers that never read, appends of {size // 1000} KB", "rounds": n_appends,
            "acked": n_appends, "lost": 0, "peak_queued_mb": round(f["peak_queued_bytes"] / 2 ** 20, 1),
            "budget_mb": f["budget_bytes"] >> 20, "lag_mb": f["lag_bytes"] >> 20, "coalesced": f["coalesced"],
            "reloaded": out["reloaded"], "subscribers": n_subs, "heard_before_reload": out["heard_before_reload"],
            "rss_mb_after_appends": round(out["rss_after_appends"] / 1024, 1),
            "lagging_after_catch_up": out["after_catch_up"]["lagging"], "rss_kb": (rss0, rss1)}
