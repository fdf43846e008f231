"""Bounded resources: a daemon under a low fd limit serves thousands of sessions, closes idle ones
(idle timeout, LRU beyond --max-open-sessions, fd headroom) and reopens them transparently."""

import os
import resource
import subprocess
import sys
import threading

import anyio
import pytest

from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

from e2e_support import git_fsck_all, serving

pytestmark = pytest.mark.anyio

FD_LIMIT = 256


def _low_fd_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class FdSampler:
    """Samples a process's fd count in a thread until stopped; keeps the maximum."""

    def __init__(self, pid: int):
        self.pid, self.max, self._stop = pid, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.max = max(self.max, _fds(self.pid))
            except OSError:
                return
            self._stop.wait(0.005)

    def stop(self) -> int:
        self._stop.set()
        self._t.join()
        return self.max


async def _open_with_node(c, sid, workdir):
    h = await c.open(sid, working_dir=str(workdir))
    node, _ = await c.append(h.id, {"role": "user", "name": "me", "output": sid, "predecessor": "ROOT"})
    return h.id, node


async def test_two_thousand_sessions_under_a_low_fd_limit(tmp_path, workdir, check):
    state = tmp_path / "state"
    async with serving(state, check, preexec_fn=_low_fd_limit) as (d, c):
        sampler = FdSampler(d.proc.pid)
        try:
            first = await c.open("keep-0", working_dir=str(workdir))
            node, _ = await c.append(first.id, {"role": "user", "name": "me", "output": "remember me",
                                                "predecessor": "ROOT"})
            ids = [first.id]
            sem = anyio.Semaphore(8)

            async def one(i):
                async with sem:
                    h = await c.open(f"s-{i:05d}", working_dir=str(workdir))
                    ids.append(h.id)
            async with anyio.create_task_group() as tg:
                for i in range(2000):
                    tg.start_soon(one, i)
            assert len(ids) == 2001
            st = await c.status()
            assert st["limits"]["fd_limit"] == FD_LIMIT and st["limits"]["max_open_sessions"] > FD_LIMIT
            assert st["evictions"]["fds"] > 0 and len(st["sessions_open"]) < 2001
            assert st["fds_open"] <= FD_LIMIT - st["limits"]["fd_reserve"] + 16
            # a new client can connect and ping
            c2 = await connect_unix(d.socket)
            try:
                assert await c2.ping() == {}
            finally:
                await c2.aclose()
            # the evicted first session reopens transparently with its data
            assert first.id not in st["sessions_open"]
            assert [n.output for n in await c.get_branch(first.id)] == ["remember me"]
            assert (await c.get_node(first.id, node.id)).output == "remember me"
            assert (await c.commit(first.id)) is not None
        finally:
            peak = sampler.stop()
    assert d.proc.returncode == 0
    assert peak <= FD_LIMIT, peak
    assert [x for x in os.listdir(state / "sessions") if x.startswith(".")] == []
    assert len(os.listdir(state / "sessions")) == 2001


async def test_lru_beyond_max_open_sessions(state_dir, workdir, check):
    async with serving(state_dir, check, args=["--max-open-sessions", "5", "--session-idle-timeout", "0"]) as (_, c):
        nodes = {}
        for i in range(20):
            sid, nodes[sid] = await _open_with_node(c, f"lru-{i}", workdir)
            assert len((await c.status())["sessions_open"]) <= 5
        st = await c.status()
        assert st["evictions"] == {"idle": 0, "lru": 15, "fds": 0, "deleted": 0}
        assert st["sessions_open"] == [f"lru-{i}" for i in range(15, 20)]
        for sid, n in nodes.items():  # every one reopens with its node
            assert [x.id for x in await c.get_branch(sid)] == [n.id]
        assert len((await c.status())["sessions_open"]) == 5
    git_fsck_all(str(state_dir))


async def test_idle_sessions_are_closed_after_the_idle_timeout(state_dir, workdir, check):
    async with serving(state_dir, check, args=["--session-idle-timeout", "0.3"]) as (_, c):
        nodes = {}
        for i in range(3):
            sid, nodes[sid] = await _open_with_node(c, f"idle-{i}", workdir)
            await c.render(sid)  # builds a render cache entry, dropped with the session
        await c.subscribe("idle-2")
        with anyio.fail_after(30):  # idle ones go; the subscribed one stays
            while (await c.status())["sessions_open"] != ["idle-2"]:
                await anyio.sleep(0.05)
        st = await c.status()
        assert st["evictions"]["idle"] == 2
        t = st["tables"]
        assert t["sessions"] == t["store_loaded"] == t["bindings"] == 1 and t["render_caches"] <= 1
        assert t["locks"] == 0 and t["pins"] == 0 and t["write_queues"] == 0
        await c.unsubscribe("idle-2")
        with anyio.fail_after(30):
            while (await c.status())["sessions_open"]:
                await anyio.sleep(0.05)
        assert (await c.status())["tables"]["render_caches"] == 0
        for sid, n in nodes.items():  # every one reopens with its node
            assert [x.id for x in await c.get_branch(sid)] == [n.id]


async def test_subscribed_sessions_under_fd_pressure(tmp_path, workdir, check):
    """More subscribed sessions than fds: the least recently used subscribed ones are closed as a last
    resort, their dirs stay watched, and another process's write reaches the subscriber (`reload`)."""
    state = tmp_path / "state"

    def low():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
    async with serving(state, check, preexec_fn=low) as (d, c):
        for i in range(60):
            await _open_with_node(c, f"sub-{i:03d}", workdir)
            await c.subscribe(f"sub-{i:03d}")
        st = await c.status()
        assert "sub-000" not in st["sessions_open"] and st["evictions"]["fds"] > 0
        assert len(st["clients"][0]["subscriptions"]) == 60
        store = SessionStore(str(state))  # another process's write (a library writer here)
        s = store.session("sub-000")
        from sessiondag import Call
        added = s.append(Call("code", "from-elsewhere", output=1))
        store.close()
        with anyio.fail_after(30):
            while True:
                note = await c.next_notification("session/did_change", timeout=30)
                if note["params"]["session_id"] == "sub-000":
                    break
        assert note["params"]["changes"] == [{"kind": "reload"}]
        assert (await c.get_node("sub-000", added.id)).name == "from-elsewhere"
        c2 = await connect_unix(d.socket)
        assert await c2.ping() == {}
        await c2.aclose()
    assert d.proc.returncode == 0


def test_a_failed_creation_leaves_nothing_behind(tmp_path):
    """Session creation that runs out of fds midway removes its temp directory."""
    state = tmp_path / "state"
    code = f"""
import os, resource
from sessiondag.store import SessionStore
store = SessionStore({str(state)!r})
used = {{int(x) for x in os.listdir('/proc/self/fd')}}
low = min(n for n in range(3, 1000) if n not in used)  # the next fd number the kernel hands out
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
failed = 0
for k in range(0, 8):
    resource.setrlimit(resource.RLIMIT_NOFILE, (low + k, hard))
    try:
        store.start_session('s%d' % k, working_dir={str(tmp_path)!r})
    except Exception:
        failed += 1
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        store.close()
store.close()
print(failed)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 0  # some creations did run out of fds
    left = os.listdir(state / "sessions")
    assert [x for x in left if x.startswith(".")] == []
