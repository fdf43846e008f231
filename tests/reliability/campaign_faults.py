"""The campaign's fault phases: a disk that fills up and turns read-only, and a low fd limit."""

from __future__ import annotations

import os
import resource
import subprocess
from typing import Any

import anyio

from campaign_support import env_for, fsck, present, rss_kb, start_daemon
from sessiondag_client import connect_unix


# --- disk full and read-only --------------------------------------------------------------------------
def _mount_tmpfs(path: str, size: str) -> None:
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], check=True)


def _umount(path: str) -> None:
    subprocess.run(["umount", "-l", path], check=False)


def phase_disk(tmp: str, n: int, workdir: str) -> dict[str, Any]:
    """Needs root (mount). Commits while the disk is full only once the store's all-or-nothing
    commit is in (the `storage_full` error exists): before that a failed commit is a known bug."""
    from sessiondag.rpc.errors import APP_CODES
    commit_while_full = "storage_full" in APP_CODES
    state = os.path.join(tmp, "disk")
    mnt = os.path.join(state, "sessions")  # the sessions live on the small tmpfs
    _mount_tmpfs(mnt, "8m")
    d = None
    codes: dict[str, dict[int, int]] = {"ok": {}, "full": {}, "ro": {}}  # error codes seen, by stage
    acked: set[str] = set()
    try:
        # idle sessions close quickly: a read-only remount needs every file on it closed for writing
        d = start_daemon(state, env_for(tmp), "--session-idle-timeout", "0.2")
        rss0 = rss_kb(d.proc.pid)

        async def run() -> dict[str, Any]:
            async with await connect_unix(d.socket) as c:
                await c.open("disk", working_dir=workdir)
                big = "x" * 20000

                async def writes(k: int, commit: bool, stage: str = "ok") -> int:
                    refused = 0
                    for i in range(k):
                        try:
                            node, _ = await c.append("disk", {"role": "code", "name": f"n{i}", "output": big})
                            acked.add(node.id)
                            if commit and i % 10 == 9:
                                await c.commit("disk")
                        except Exception as e:  # noqa: BLE001 - counted: refusals are the point
                            code = getattr(e, "rpc_code", getattr(e, "code", 0))
                            codes[stage][code] = codes[stage].get(code, 0) + 1
                            refused += 1
                    return refused
                await writes(20, True)
                filler = os.path.join(mnt, "filler")
                with open(filler, "wb") as f:  # fill the disk
                    try:
                        while True:
                            f.write(b"\0" * (1 << 16))
                            f.flush()
                    except OSError:
                        pass
                full_refused = await writes(n, commit_while_full, "full")
                assert await c.ping() == {}
                os.unlink(filler)
                await writes(20, True)                               # works again
                with anyio.fail_after(30):
                    while (await c.status())["sessions_open"]:
                        await anyio.sleep(0.05)
                    while subprocess.run(["mount", "-o", "remount,ro", mnt], capture_output=True).returncode:
                        await anyio.sleep(0.05)  # busy: a session was loaded again meanwhile
                ro_refused = await writes(n, False, "ro")
                assert await c.ping() == {}
                subprocess.run(["mount", "-o", "remount,rw", mnt], check=True)
                await writes(20, True)
                await c.commit("disk")
                return {"full_refused": full_refused, "ro_refused": ro_refused}
        got = anyio.run(run)
        rss1 = rss_kb(d.proc.pid)
        d.stop()
        d = start_daemon(state, env_for(tmp))  # a restart reads everything back
        d.stop()
        lost = present(state, {"disk": acked})
        checked, bad = fsck(state)
    finally:
        if d is not None and d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait()
        _umount(mnt)
    return {"phase": "disk full (tmpfs 8 MiB) + read-only remount", "rounds": n, "acked": len(acked), "lost": lost,
            "refused": f"{got['full_refused']} full, {got['ro_refused']} ro",
            "codes": "; ".join(f"{st}: " + ",".join(f"{k}x{v}" for k, v in sorted(c.items()))
                               for st, c in codes.items() if c),
            "codes_by_stage": codes,
            "fsck": f"{checked - bad}/{checked}", "fsck_bad": bad, "rss_kb": (rss0, rss1)}


# --- fd limit -------------------------------------------------------------------------------------------
def phase_fds(tmp: str, n: int, workdir: str, limit: int = 256) -> dict[str, Any]:
    state = os.path.join(tmp, "fds")

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    d = start_daemon(state, env_for(tmp), preexec=low)
    rss0 = rss_kb(d.proc.pid)
    peak = 0
    first: dict[str, Any] = {}

    async def run() -> dict[str, Any]:
        async with await connect_unix(d.socket) as c:
            sem = anyio.Semaphore(8)

            async def one(i: int) -> None:
                nonlocal peak
                async with sem:
                    h = await c.open(f"f-{i:05d}", working_dir=workdir)
                    node, _ = await c.append(h.id, {"role": "code", "name": "x", "output": i})
                    first.setdefault(h.id, node.id)
                    peak = max(peak, len(os.listdir(f"/proc/{d.proc.pid}/fd")))
            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(one, i)
            async with await connect_unix(d.socket) as c2:
                assert await c2.ping() == {}
            assert (await c.get_node("f-00000", first["f-00000"])).output == 0  # reopened transparently
            return await c.status()
    st = anyio.run(run)
    rss1 = rss_kb(d.proc.pid)
    d.stop()
    return {"phase": f"{n} sessions under ulimit -n {limit}", "rounds": n, "peak_fds": peak,
            "evicted_for_fds": st["evictions"]["fds"], "open_at_end": len(st["sessions_open"]),
            "lost": 0, "rss_kb": (rss0, rss1)}
