"""agent/* through a real daemon subprocess (stdio): permissions and ask_user as server→client
requests, agent/cancel and $/cancelRequest, typed errors."""

import os

import anyio
import pytest

from sessiondag.store import SessionStore

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


async def _client(state, env):
    from sessiondag_client.connecting import spawn_stdio
    return await spawn_stdio(state, env=env)


async def _turn_finished(client):
    while True:
        msg = await client.next_notification("agent/did_update", timeout=30)
        if msg["params"]["kind"] == "turn_finished":
            return msg["params"]["result"]


@pytest.mark.anyio
async def test_permission_requests_go_to_the_client(daemon_env, workdir):
    state, env = daemon_env("- match: write it\n  repeat: true\n"
                            "  tool_calls: [{name: write_file, arguments: {path: out.txt, content: v1}}]\n"
                            "- match: permission\n  text: refused\n"
                            "- match: wrote\n  text: done\n")
    client = await _client(state, env)
    asked = []

    async def on_permission(params):
        asked.append(params)
        return {"granted": len(asked) > 1}
    client.on_request("agent/request_permission", on_permission)
    try:
        h = await client.open(working_dir=str(workdir))
        r = await client.agent_prompt(session_id=h.id, content="write it")
        assert r["stop_reason"] == "end_turn" and r["text"] == "refused" and not (workdir / "out.txt").exists()
        assert asked == [{"session_id": h.id, "kind": "write",
                          "detail": {"tool": "write_file", "path": "out.txt", "old_text": None}}]   # a new file
        r = await client.agent_prompt(session_id=h.id, content="write it")
        assert r["text"] == "done" and (workdir / "out.txt").read_text() == "v1"
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_ask_user_goes_to_the_client_and_is_recorded(daemon_env, workdir):
    state, env = daemon_env("- tool_calls: [{name: ask_user, arguments: {question: color, options: [red, green]}}]\n"
                            "- match: green\n  text: green it is\n")
    client = await _client(state, env)

    async def on_ask(params):
        assert params["question"] == "color" and params["options"] == ["red", "green"]
        return {"answer": "green"}
    client.on_request("agent/ask_user", on_ask)
    try:
        h = await client.open(working_dir=str(workdir))
        r = await client.agent_prompt(session_id=h.id, content="pick")
        assert r["text"] == "green it is"
    finally:
        await client.aclose()
    store = SessionStore(state)
    s = store.session(h.id)
    (ans,) = [c for c in s.graph.nodes.values() if c.role == "user" and c.input]
    assert ans.output == "green" and s.get_node(ans.caller).name == "ask_user"
    store.close()


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["agent/cancel", "$/cancelRequest"])
async def test_cancel_a_running_turn(daemon_env, workdir, how):
    state, env = daemon_env("- text: thinking about it\n  hang: true\n")
    client = await _client(state, env)
    try:
        h = await client.open(working_dir=str(workdir))
        out = {}
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def prompt():
                with scope:
                    out["r"] = await client.agent_prompt(session_id=h.id, content="think")
            tg.start_soon(prompt)
            while True:  # wait until the model is streaming
                msg = await client.next_notification("agent/did_update", timeout=30)
                if msg["params"]["kind"] == "text_delta":
                    break
            if how == "agent/cancel":
                assert await client.agent_cancel(session_id=h.id) == {"cancelled": True}
            else:
                scope.cancel()
            result = await _turn_finished(client)
        assert result["stop_reason"] == "cancelled"
        if how == "agent/cancel":
            assert out["r"]["stop_reason"] == "cancelled"
        nodes = await client.get_branch(h.id)
        assert (nodes[-1].role, nodes[-1].status) == ("llm", "cancelled")
        assert await client.agent_cancel(session_id=h.id) == {"cancelled": False}
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_typed_errors(daemon_env, workdir):
    from sessiondag_client.errors import InvalidParamsError, SessionResumeError
    state, env = daemon_env("[]\n")
    client = await _client(state, env)
    try:
        with pytest.raises(SessionResumeError) as ei:
            await client.agent_prompt(session_id="nope", content="x")
        assert ei.value.reason == "missing"
        h = await client.open(working_dir=str(workdir))
        with pytest.raises(InvalidParamsError):
            await client.agent_prompt(session_id=h.id, content=42)
        with pytest.raises(InvalidParamsError):
            await client.call("agent/prompt", {"session_id": h.id, "content": "x", "extra": 1})
        r = await client.agent_prompt(session_id=h.id, content="x")  # an empty script: an error turn
        assert r["stop_reason"] == "error" and r["error"]["type"] == "ProviderError"
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_retry_through_the_daemon_is_a_sibling_without_the_error(daemon_env, workdir):
    state, env = daemon_env("- text: half\n  error: upstream 500\n- match: again\n  text: fine now\n")
    client = await _client(state, env)
    try:
        h = await client.open(working_dir=str(workdir))
        r1 = await client.agent_prompt(session_id=h.id, content="try")
        assert r1["stop_reason"] == "error" and r1["error"]["message"] == "upstream 500"
        u1 = await client.get_node(h.id, r1["user_node_id"])
        r2 = await client.agent_prompt(session_id=h.id, content="try again", branch_from=u1.predecessor)
        assert r2["stop_reason"] == "end_turn" and r2["text"] == "fine now"
        u2 = await client.get_node(h.id, r2["user_node_id"])
        assert u2.predecessor == u1.predecessor and u2.id != u1.id
        branch = await client.get_branch(h.id)
        assert r1["head_id"] not in [c.id for c in branch]
        rendered = await client.render(h.id)
        assert "half" not in str(rendered)
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_daemon_stop_finalizes_running_sub_agents(daemon_env, workdir):
    """SIGTERM while a sub-agent (spawned by a finished prompt) is mid-call: the daemon cancels it,
    its nodes end `cancelled`, the turns are committed, nothing is left `running` on disk."""
    import signal
    import subprocess
    state, env = daemon_env("- match: delegate\n"
                            "  tool_calls: [{name: spawn_agent, arguments: {task: SLOW-JOB-7}}]\n"
                            "- match: SLOW-JOB-7\n  text: working-on-it\n  hang: true\n"
                            "- match: spawned sub-agent\n  text: delegated\n")
    client = await _client(state, env)
    try:
        h = await client.open(working_dir=str(workdir))
        r = await client.agent_prompt(session_id=h.id, content="delegate")
        assert r["text"] == "delegated"
        with anyio.fail_after(30):  # the sub-agent's model call is streaming (and then hangs)
            while True:
                msg = await client.next_notification("agent/did_update", timeout=30)
                if msg["params"]["kind"] == "text_delta" and "working" in msg["params"]["delta"]:
                    break
        client.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(60):
            assert await client.process.wait() == 0
    finally:
        await client.aclose()
    s = SessionStore(state).session(h.id)
    nodes = list(s.graph.nodes.values())
    assert not [c for c in nodes if c.status == "running"]
    hung = [c for c in nodes if c.role == "llm" and c.output == "working-on-it"]
    assert [c.status for c in hung] == ["cancelled"]
    assert [c.status for c in nodes if c.name == "sub_agent"] == ["cancelled"]
    assert not s.open_turn
    git = os.path.join(s.path, "git")
    assert subprocess.run(["git", "--git-dir", git, "fsck", "--strict"], capture_output=True).returncode == 0
