"""session/restore, session/diff, checkout and agent/prompt with restore_files through a real daemon
subprocess (stdio), its watcher feeding warm snapshots; session/did_change announces the restore."""

import os

import anyio
import pytest

from sessiondag_client.wire.errors import TurnRunningError, WorkspaceDirtyError

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


@pytest.fixture
def daemon_env(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(
        "- match: one\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"one\\n\"}}]\n"
        "- match: two\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"two\\n\"}}]\n"
        "- match: slow\n  tool_calls: [{name: run_command, arguments: {command: \"sleep 3\"}}]\n"
        "- match: read\n  tool_calls: [{name: read_file, arguments: {path: f.txt}}]\n"
        "- repeat: true\n  text: done\n")
    state = tmp_path / "state"
    env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script),
               SESSIONDAG_HOME=str(state), SESSIONDAG_ALLOW="write,run")
    return str(state), env


async def _client(state, env):
    from sessiondag_client.connecting import spawn_stdio
    return await spawn_stdio(state, env=env)


@pytest.mark.anyio
async def test_restore_and_diff_through_the_daemon(daemon_env, workdir):
    state, env = daemon_env
    c = await _client(state, env)

    async def grant(params):
        return {"granted": True}
    c.on_request("agent/request_permission", grant)
    try:
        h = await c.open(working_dir=str(workdir))
        r1 = await c.agent_prompt(h.id, "one")
        r2 = await c.agent_prompt(h.id, "two")
        assert (workdir / "f.txt").read_text() == "two\n"
        ck2 = (await c.get_node(h.id, r2["user_node_id"])).metadata["checkpoint"]
        assert ck2["mode"] == "dirty" and ck2["files"] == 1   # the watcher's marks, no walk (a warm snapshot)
        d = await c.diff(h.id, r2["head_id"], r1["head_id"])
        assert [f["path"] for f in d["files"]] == ["f.txt"] and "+two\n" in d["files"][0]["diff"]
        await c.subscribe(h.id)
        dry = await c.restore(h.id, r1["head_id"], dry_run=True)
        assert dry["files"]["changes"] == [{"path": "f.txt", "change": "write"}]
        out = await c.restore(h.id, r1["head_id"])
        assert (workdir / "f.txt").read_text() == "one\n" and out["files"]["undo"]["id"]
        with anyio.fail_after(30):
            while True:
                msg = await c.next_notification("session/did_change", timeout=30)
                kinds = [ch for ch in msg["params"]["changes"] if ch["kind"] == "restore"]
                if kinds:
                    assert kinds[0]["paths"] == ["f.txt"] and kinds[0]["node_id"] == r1["head_id"]
                    break
        (workdir / "mine.txt").write_text("mine\n")
        with pytest.raises(WorkspaceDirtyError) as e:
            await c.restore(h.id, r2["head_id"])
        assert e.value.rpc_data["paths"] == ["mine.txt"]
        await c.restore(h.id, undo=True, force=True)      # forced: mine.txt is in no undo point before it
        assert (workdir / "f.txt").read_text() == "two\n" and not (workdir / "mine.txt").exists()
        # checkout with the files, then a fork that reads them
        assert await c.checkout(h.id, r1["head_id"], restore_files=True) == r1["head_id"]
        assert (workdir / "f.txt").read_text() == "one\n"
        await c.restore(h.id, r2["head_id"])
        r3 = await c.agent_prompt(h.id, "read", branch_from=r1["head_id"], restore_files=True)
        assert (workdir / "f.txt").read_text() == "one\n" and r3["stop_reason"] == "end_turn"
        # refused while a turn runs
        async with anyio.create_task_group() as tg:
            tg.start_soon(c.agent_prompt, h.id, "slow")
            with anyio.fail_after(20):
                while True:
                    st = await c.status()
                    if h.id in st["running_turns"]:
                        break
                    await anyio.sleep(0.05)
            with pytest.raises(TurnRunningError):
                await c.restore(h.id, r1["head_id"])
    finally:
        await c.aclose()
