"""Issue 19, item 3: a cancel ends the turn whatever a tool is doing. A tool blocked in a syscall
(open() of a FIFO nobody writes), a command blocked on one, a client that never answers ask_user:
the turn ends `cancelled`, is committed and releases the turn lock; the abandoned tool thread can
never write into the session afterwards. In-process and through a real daemon (agent/cancel)."""

import os
import threading

import anyio
import pytest

from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime.errors import RunCancelled
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.tools import Tool
from sessiondag.core.model import Call
from sessiondag.store import SessionStore


def _blocking_tool(fifo, entered, left, attempts):
    def fn(ctx):
        entered.set()
        try:
            with open(fifo, "rb") as f:        # blocks in the kernel until a writer opens the FIFO
                f.read()
            try:
                ctx.writer.append(Call("code", "late", output="written after the cancel",
                                       caller=ctx.writer.head_id, predecessor=None))
            except RunCancelled as e:
                attempts.append(e)
        finally:
            left.set()
        return "read it"
    return Tool("block", "blocks on a FIFO", {"type": "object", "properties": {}}, fn)


def test_a_tool_blocked_in_a_syscall_does_not_hold_the_turn(store, tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    entered, left, attempts = threading.Event(), threading.Event(), []
    script = [{"match": "block", "tool_calls": [{"name": "block", "arguments": {}}]}, {"text": "again"}]
    rt = Runtime(ScriptedProvider(script), extra_tools=(_blocking_tool(fifo, entered, left, attempts),))
    out = {}
    t = threading.Thread(target=lambda: out.update(r=run_task("block", working_dir=wd, store=store, runtime=rt)))
    t.start()
    assert entered.wait(30)
    rt.cancel()
    t.join(30)
    assert not t.is_alive(), "the turn did not end at the cancel"
    r = out["r"]
    s = store.session(r.session_id)
    assert r.stop_reason == "cancelled"
    [tool] = [c for c in s.get_branch() if c.name == "block"]
    assert tool.status == "cancelled" and not s.open_turn
    # the turn lock is free: the next turn of the session runs
    r2 = run_task("next", session_id=r.session_id, working_dir=wd, store=store,
                  runtime=Runtime(ScriptedProvider([{"text": "next done"}])))
    assert r2.stop_reason == "end_turn"
    count = len(s.graph.nodes)
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)   # unblock the abandoned tool thread
    os.close(fd)
    assert left.wait(30)
    assert len(attempts) == 1                          # it tried to write and was refused
    assert len(s.graph.nodes) == count and not [c for c in s.graph.nodes.values() if c.name == "late"]


async def _until(client, kind):
    while True:
        msg = await client.next_notification("agent/did_update", timeout=30)
        if msg["params"]["kind"] == kind:
            return msg["params"]


@pytest.mark.anyio
@pytest.mark.process
async def test_through_the_daemon_fifo_reads_end_and_cancel_ends_blocked_tools(daemon_env, workdir):
    from sessiondag_client.connecting import spawn_stdio
    os.mkfifo(workdir / "pipe")
    state, env = daemon_env(
        "- match: read the pipe\n  tool_calls: [{name: read_file, arguments: {path: pipe}}]\n"
        "- match: not a regular file\n  text: it is a pipe\n"
        "- match: cat the pipe\n  tool_calls: [{name: run_command, arguments: {command: cat pipe}}]\n"
        "- match: ask me\n  tool_calls: [{name: ask_user, arguments: {question: color, options: [red]}}]\n"
        "- text: fine\n  repeat: true\n")
    client = await spawn_stdio(state, env=env)
    client.on_request("agent/request_permission", lambda params: _granted())
    release = anyio.Event()

    async def on_ask(params):           # answers only after the turn was cancelled and ended
        await release.wait()
        return {"answer": "red"}
    client.on_request("agent/ask_user", on_ask)
    try:
        h = await client.open(working_dir=str(workdir))
        r = await client.agent_prompt(session_id=h.id, content="read the pipe")   # used to hang forever
        assert r["stop_reason"] == "end_turn" and r["text"] == "it is a pipe"
        await _until(client, "turn_finished")          # its notifications are behind us
        for prompt in ("cat the pipe", "ask me"):
            async with anyio.create_task_group() as tg:
                out = {}

                async def go():
                    out["r"] = await client.agent_prompt(session_id=h.id, content=prompt)
                tg.start_soon(go)
                await _until(client, "tool_call")
                assert await client.agent_cancel(session_id=h.id) == {"cancelled": True}
                result = (await _until(client, "turn_finished"))["result"]
            assert result["stop_reason"] == "cancelled" and out["r"]["stop_reason"] == "cancelled"
            nodes = await client.get_branch(h.id)
            assert [c.status for c in nodes if c.role == "code" and c.name in ("run_command", "ask_user")][-1] \
                == "cancelled"
        r = await client.agent_prompt(session_id=h.id, content="still there?")   # the turn lock is free
        assert r["stop_reason"] == "end_turn" and r["text"] == "fine"
        release.set()                   # the late answer reaches a tool thread fenced off the session
        assert (await client.agent_prompt(session_id=h.id, content="after the answer"))["text"] == "fine"
    finally:
        await client.aclose()
    store = SessionStore(state)
    s = store.session(h.id)
    assert not s.open_turn and not [c for c in s.graph.nodes.values() if c.status == "running"]
    assert not [c for c in s.graph.nodes.values() if c.role == "user" and c.output == "red"]   # no late answer
    store.close()


async def _granted():
    return {"granted": True}
