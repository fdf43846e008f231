"""A session whose first snapshot is still under way, in a real daemon (stdio): a cancelled first
turn owes its snapshot (runtime/baseline.py), and the baseline is still reading a big file of the
working dir (2 GiB, sparse: no disk; the daemon holds it open while it hashes it, which the tests
read from /proc). Closing such a session settles the baseline first, which takes as long as the
snapshot does.

- Deleted under the daemon: the daemon drops it on its event loop, but the close runs in a worker
  thread: the deletion is announced and other requests are answered while the file is still being
  read (the close once ran on the loop, which answered nothing until the snapshot was done).
- The evictor never closes it while the baseline is under way (SessionService._busy), and does once
  it is done."""

import os

import anyio
import pytest

from waiting import until

pytestmark = pytest.mark.process   # a daemon child process

BIG = 2 << 30


@pytest.fixture
def daemon_env(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("- text: thinking about it\n  hang: true\n")
    state = tmp_path / "state"
    env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script),
               SESSIONDAG_HOME=str(state))
    return str(state), env


def _big_tree(wd):
    wd.mkdir(parents=True, exist_ok=True)
    (wd / "a.txt").write_text("a\n")
    with open(wd / "disk.img", "wb") as f:
        f.truncate(BIG)
    return str(wd / "disk.img")


def _holds(pid, path):
    """Whether process `pid` has `path` open now."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                return True
        except OSError:
            continue
    return False


async def _cancelled_first_turn(c, sid):
    """A first turn cancelled while the model streams: it owes its snapshot to the baseline."""
    async with anyio.create_task_group() as tg:
        out = {}

        async def prompt():
            out["r"] = await c.agent_prompt(session_id=sid, content="think")
        tg.start_soon(prompt)
        while True:
            msg = await c.next_notification("agent/did_update", timeout=60)
            if msg["params"]["kind"] == "text_delta":
                break
        assert await c.agent_cancel(session_id=sid) == {"cancelled": True}
    assert out["r"]["stop_reason"] == "cancelled"


@pytest.mark.anyio
async def test_a_deleted_session_settling_its_baseline_does_not_hold_the_event_loop(daemon_env, tmp_path):
    from sessiondag_client.connecting import spawn_stdio
    state, env = daemon_env
    big = _big_tree(tmp_path / "work")
    c = await spawn_stdio(state, env=env)
    try:
        h = await c.open(working_dir=str(tmp_path / "work"))
        await c.subscribe(h.id)
        pid = (await c.status())["pid"]
        await _cancelled_first_turn(c, h.id)
        await until(lambda: _holds(pid, big), "the baseline reads the big file", timeout=120)
        os.rename(os.path.join(state, "sessions", h.id), tmp_path / "gone")   # deleted, as the daemon sees it
        msg = await c.next_notification("session/did_delete", timeout=60)
        assert msg["params"]["session_id"] == h.id
        answers = [await c.status() for _ in range(3)]
        assert _holds(pid, big), "the snapshot ended before the test could tell"
        assert all(h.id not in a["sessions_open"] for a in answers)   # dropped at once, closed behind
        with anyio.fail_after(120):
            while (await c.status())["tables"]["store_loaded"]:   # the close in its worker thread ends
                await anyio.sleep(0.05)
    finally:
        await c.aclose()


@pytest.mark.anyio
async def test_the_evictor_keeps_a_session_whose_baseline_is_under_way(daemon_env, tmp_path):
    from sessiondag_client.connecting import spawn_stdio
    state, env = daemon_env
    big = _big_tree(tmp_path / "work")
    for name in ("b", "c"):
        (tmp_path / name).mkdir()
    c = await spawn_stdio(state, env=env, extra_args=("--max-open-sessions", "1"))
    try:
        h = await c.open(working_dir=str(tmp_path / "work"))
        pid = (await c.status())["pid"]
        await _cancelled_first_turn(c, h.id)
        await until(lambda: _holds(pid, big), "the baseline reads the big file", timeout=120)
        b = await c.open(working_dir=str(tmp_path / "b"))      # over the limit: the evictor looks
        st = await c.status()
        assert _holds(pid, big), "the snapshot ended before the test could tell"
        assert h.id in st["sessions_open"]
        await until(lambda: not _holds(pid, big), "the baseline is done", timeout=120)

        async def settled():
            return h.id not in (await c.status())["sessions_open"]
        for _ in range(200):    # the baseline detaches once settled; then an open evicts the LRU session
            await c.open(working_dir=str(tmp_path / "c"))
            if await settled():
                break
            await anyio.sleep(0.05)
        assert await settled()
        assert b.id
    finally:
        await c.aclose()
