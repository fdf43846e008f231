"""A session deleted under the daemon: acknowledged must mean present.

- a reset from another process while the daemon has the session open is refused (session_busy), by
  the store itself, so every CLI path gets it;
- a directory removed anyway (rm -rf, a rename) is noticed: writes are refused (session_deleted),
  subscribers hear session/did_delete, the daemon drops the session; no write is acknowledged after
  the directory went away.
"""

import os
import shutil
import subprocess
import sys

import anyio
import pytest

from sessiondag.core.errors import SessionBusyError
from sessiondag.store import SessionStore
from sessiondag_client import SessionDeletedError, connect_unix

pytestmark = pytest.mark.anyio

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


async def _open_with_node(c, sid, workdir):
    h = await c.open(sid, working_dir=str(workdir))
    node, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "kept", "predecessor": "ROOT"})
    return h, node


async def test_reset_while_the_daemon_has_it_open_goes_through_the_daemon(socket_daemon, state_dir, workdir, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h, node = await _open_with_node(c, "busy", workdir)
        # the CLI deletes through the daemon that holds the session (issue 26, item 8) — after asking:
        # not a terminal and no --yes, nothing is deleted
        r = subprocess.run(CLI + ["sessions", "reset", h.id], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, SESSIONDAG_HOME=str(state_dir)))
        assert r.returncode == 2 and "pass --yes" in r.stderr and len(r.stderr.strip().splitlines()) == 1
        # the library path refuses, naming the daemon's pid
        store = SessionStore(str(state_dir))
        with pytest.raises(SessionBusyError) as ei:
            store.reset_session(h.id)
        assert socket_daemon.proc.pid in ei.value.holders
        store.close()
        assert [n.id for n in await c.get_branch(h.id)] == [node.id]
        n2, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "still here", "caller": node.id,
                                      "predecessor": node.id})
        # through the daemon the reset works (here the CLI's), and subscribers hear it
        c2 = await connect_unix(socket_daemon.socket)
        try:
            await c2.subscribe(h.id)
            r = await anyio.to_thread.run_sync(lambda: subprocess.run(
                CLI + ["sessions", "reset", h.id, "--yes"], capture_output=True, text=True, timeout=60,
                env=dict(os.environ, SESSIONDAG_HOME=str(state_dir))))
            assert r.returncode == 0 and "through the daemon" in r.stdout, r.stderr
            note = await c2.next_notification("session/did_delete", timeout=30)
            assert note["params"] == {"session_id": h.id, "detail": "reset"}
        finally:
            await c2.aclose()
    finally:
        await c.aclose()
    assert not os.path.exists(state_dir / "sessions" / "busy")


async def test_rm_rf_under_the_daemon(socket_daemon, state_dir, workdir, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h, node = await _open_with_node(c, "doomed", workdir)
        await c.subscribe(h.id)
        shutil.rmtree(state_dir / "sessions" / h.id)
        # at once, before any watcher could notice: nothing is acknowledged any more
        with pytest.raises(SessionDeletedError) as ei:
            await c.append(h.id, {"role": "llm", "name": "m", "output": "lost?", "caller": node.id,
                                  "predecessor": node.id})
        assert ei.value.session_id == h.id
        note = await c.next_notification("session/did_delete", timeout=30)
        assert note["params"]["session_id"] == h.id
        for call in (lambda: c.append(h.id, {"role": "user", "name": "me", "output": "x", "predecessor": "ROOT"}),
                     lambda: c.update(h.id, node.id, metadata={"a": 1}), lambda: c.commit(h.id)):
            with pytest.raises(SessionDeletedError):
                await call()
        with anyio.fail_after(30):
            while h.id in (await c.status())["sessions_open"]:
                await anyio.sleep(0.02)
        st = await c.status()
        assert st["evictions"]["deleted"] == 1 and st["tables"]["store_loaded"] == 0
        # the id can be used again: a new session, not the old one
        h2 = await c.open(h.id, working_dir=str(workdir))
        assert h2.head_id == "ROOT" and await c.get_branch(h.id) == []
    finally:
        await c.aclose()


async def test_no_write_is_acknowledged_after_the_directory_moved(socket_daemon, state_dir, workdir, check):
    """Writers race a rename of the session directory (what a non-cooperating reset does): every
    acknowledged node is in the moved journal, and no write is acknowledged once the move is done."""
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h, node = await _open_with_node(c, "moved", workdir)
        acked: list[str] = []
        moved = anyio.Event()
        after_move: list[str] = []

        async def writer(k):
            for i in range(400):
                try:
                    n, _ = await c.append(h.id, {"role": "code", "name": f"w{k}-{i}", "output": i,
                                                 "caller": node.id})
                except SessionDeletedError:
                    return
                acked.append(n.id)
                if moved.is_set():
                    after_move.append(n.id)

        async def mover():
            while len(acked) < 50:
                await anyio.sleep(0.001)
            await anyio.to_thread.run_sync(os.rename, state_dir / "sessions" / h.id, state_dir / "elsewhere")
            moved.set()
        async with anyio.create_task_group() as tg:
            for k in range(4):
                tg.start_soon(writer, k)
            tg.start_soon(mover)
    finally:
        await c.aclose()
    # answers that were already on their way when the rename returned may arrive after it; the
    # ones that matter are those whose write started after it: each writer stops at its first refusal
    assert len(acked) < 4 * 400
    os.makedirs(state_dir / "copy" / "sessions")
    shutil.copytree(state_dir / "elsewhere", state_dir / "copy" / "sessions" / h.id)
    s = SessionStore(str(state_dir / "copy")).session(h.id)
    missing = [nid for nid in acked if nid not in s.graph.nodes]
    assert missing == [], f"{len(missing)} acknowledged nodes exist nowhere"


async def test_an_agent_turn_in_a_deleted_session_acknowledges_nothing(daemon_factory, tmp_path, state_dir,
                                                                        workdir, check):
    script = tmp_path / "script.yaml"
    script.write_text("- text: hello\n  repeat: true\n")
    from e2e_support import DaemonProc
    d = DaemonProc(["--socket", "--state-dir", str(state_dir)],
                   env=dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script)))
    try:
        c = await connect_unix(d.socket)
        c.observer = check
        try:
            h = await c.open("agent", working_dir=str(workdir))
            assert (await c.agent_prompt(session_id=h.id, content="one"))["stop_reason"] == "end_turn"
            shutil.rmtree(state_dir / "sessions" / h.id)
            with pytest.raises(SessionDeletedError):
                await c.agent_prompt(session_id=h.id, content="two")
            assert await c.ping() == {}
        finally:
            await c.aclose()
    finally:
        assert d.stop() == 0
