"""MCP servers nobody here wrote (the official SDK's MCPServer, tests/mcp/servers.py) used by the
agent through `sessiondag acp` and a real daemon: stdio servers offered in ACP's session/new,
streamable HTTP and SSE servers from a working dir's .sessiondag/mcp.json, a crashing server, a
server that does not start, and the permission every MCP tool call asks."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import EnvVariable, McpServerStdio
from support import RecordingClient, acp_process, acp_session, daemon_branch

pytestmark = pytest.mark.anyio
SERVER = str(Path(__file__).parent / "servers.py")


def stdio(name: str = "t", **env: str) -> McpServerStdio:
    return McpServerStdio(name=name, command=sys.executable, args=[SERVER, "stdio"],
                          env=[EnvVariable(name=k, value=v) for k, v in env.items()])


@contextlib.contextmanager
def http_server(tmp: Path):
    """servers.py over streamable HTTP (and SSE) on 127.0.0.1, port 0; yields the port."""
    portfile = tmp / "mcp-port"
    log = open(tmp / "mcp-http.log", "wb")
    p = subprocess.Popen([sys.executable, SERVER, "http", str(portfile)], stdout=log, stderr=log)
    try:
        while not portfile.exists():   # ready once the socket is bound and the port written
            assert p.poll() is None, (tmp / "mcp-http.log").read_text()
            time.sleep(0.02)
        yield int(portfile.read_text())
    finally:
        p.terminate()
        p.wait(10)
        log.close()


ECHO = """\
- match: echo please
  tool_calls: [{name: mcp__t__echo, arguments: {text: hi there}}]
- match: "echo: hi there"
  text: the server echoed
- match: where are you
  repeat: true
  tool_calls: [{name: mcp__t__where, arguments: {}}]
- match: cwd=
  repeat: true
  text: found it
- match: touch it
  tool_calls: [{name: mcp__t__touch, arguments: {name: made.txt}}]
- match: permission
  text: not allowed
- match: crash now
  tool_calls: [{name: mcp__t__crash, arguments: {}}]
- match: crashed
  text: it crashed
- match: shout
  tool_calls: [{name: mcp__t__shout, arguments: {text: hey}}]
- match: Error executing tool shout
  text: it refused
"""


async def test_a_stdio_server_offered_in_session_new_is_used_in_a_turn(acp_env):
    acp_env.script.write_text(ECHO)
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        assert conn.init.agent_capabilities.mcp_capabilities.http is True
        sid = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[stdio(MCP_TEST_ENV="from-acp")])).session_id
        client.permission_answers = ["allow_once"]
        res = await conn.prompt(session_id=sid, prompt=[text_block("echo please")])
        assert res.stop_reason == "end_turn" and client.agent_text(sid) == "the server echoed"
        (req,) = client.permission_requests
        assert req.title == "mcp:t/echo" and req.raw_input["server"] == "t" and req.raw_input["name"] == "echo"
        (start,) = client.of("tool_call", sid)
        assert start.title == "mcp:t/echo" and start.raw_input == {"text": "hi there"}
        final = client.of("tool_call_update", sid)[-1]
        assert final.status == "completed" and final.raw_output == {"output": "echo: hi there", "error": None}

        client.clear()   # "always" for the whole server: no more questions for its tools
        client.permission_answers = ["allow_server"]
        await conn.prompt(session_id=sid, prompt=[text_block("where are you")])
        await conn.prompt(session_id=sid, prompt=[text_block("where are you")])
        assert len(client.permission_requests) == 2
        outs = [u.raw_output["output"] for u in client.of("tool_call_update", sid) if u.status == "completed"]
        # spawned in the session's working dir, with the env the client gave; started once per session
        assert outs[0] == outs[1] and outs[0].startswith(f"cwd={acp_env.work} env=from-acp pid=")
    nodes = await daemon_branch(acp_env, sid)
    tool = next(n for n in nodes if n.role == "code" and n.name == "mcp:t/echo")
    assert tool.input == {"text": "hi there"} and tool.output == "echo: hi there" and tool.status == "completed"


async def test_a_refused_mcp_tool_does_nothing_and_an_error_result_fails_the_call(acp_env):
    acp_env.script.write_text(ECHO)
    async with acp_session(acp_env, mcp_servers=[stdio()]) as (conn, client, sid):
        client.permission_answers = ["reject_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("touch it")])
        assert client.agent_text(sid) == "not allowed"
        assert not (acp_env.work / "made.txt").exists()
        final = client.of("tool_call_update", sid)[-1]
        assert final.status == "failed" and final.raw_output["error"]["type"] == "PermissionDeniedError"
        client.clear()
        client.permission_answers = ["allow_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("shout")])
        assert client.agent_text(sid) == "it refused"
        final = client.of("tool_call_update", sid)[-1]
        assert final.status == "failed" and final.raw_output["error"]["type"] == "McpToolError"


async def test_a_crashing_server_fails_that_call_and_is_restarted(acp_env):
    acp_env.script.write_text(ECHO)
    async with acp_session(acp_env, mcp_servers=[stdio()]) as (conn, client, sid):
        client.permission_answers = ["allow_server"]
        await conn.prompt(session_id=sid, prompt=[text_block("where are you")])
        await conn.prompt(session_id=sid, prompt=[text_block("crash now")])
        assert client.agent_text(sid).endswith("it crashed")
        crash = [u for u in client.of("tool_call_update", sid) if u.status == "failed"][-1]
        assert crash.raw_output["error"]["type"] == "McpServerError" and "crashed" in crash.raw_output["error"]["message"]
        await conn.prompt(session_id=sid, prompt=[text_block("where are you")])
    nodes = await daemon_branch(acp_env, sid)
    pids = [n.output.rsplit("pid=", 1)[1] for n in nodes if n.name == "mcp:t/where" and n.status == "completed"]
    assert len(pids) == 2 and pids[0] != pids[1]   # a new process served the call after the crash


async def test_a_server_that_does_not_start_is_a_typed_error(acp_env):
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        bad = McpServerStdio(name="broken", command=str(acp_env.tmp / "no-such-server"), args=[], env=[])
        with pytest.raises(RequestError) as e:
            await conn.new_session(cwd=str(acp_env.work), mcp_servers=[bad])
        assert e.value.code == -32024 and e.value.data["kind"] == "mcp_server_failed"
        assert e.value.data["server"] == "broken" and e.value.data["reason"] == "start_failed"
        exits = McpServerStdio(name="exits", command=sys.executable, args=["-c", "import sys; sys.exit(2)"], env=[])
        with pytest.raises(RequestError) as e:
            await conn.new_session(cwd=str(acp_env.work), mcp_servers=[exits])
        assert e.value.data["server"] == "exits"
        ok = (await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])).session_id   # and it keeps serving
        assert ok


HTTP = """\
- match: add them
  tool_calls: [{name: mcp__h__add, arguments: {a: 20, b: 22}}]
- match: "42"
  text: forty-two over http
- match: echo over sse
  tool_calls: [{name: mcp__s__echo, arguments: {text: via sse}}]
- match: "echo: via sse"
  text: sse works
"""


async def test_http_and_sse_servers_from_the_working_dir_file(acp_env, tmp_path):
    acp_env.script.write_text(HTTP)
    with http_server(tmp_path) as port:
        (acp_env.work / ".sessiondag").mkdir()
        (acp_env.work / ".sessiondag" / "mcp.json").write_text(json.dumps({"mcpServers": {
            "h": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"},
            "s": {"type": "sse", "url": f"http://127.0.0.1:{port}/sse-app/sse"}}}))
        async with acp_session(acp_env) as (conn, client, sid):
            client.permission_answers = ["allow_once", "allow_once"]
            await conn.prompt(session_id=sid, prompt=[text_block("add them")])
            assert client.agent_text(sid) == "forty-two over http"
            client.clear()
            await conn.prompt(session_id=sid, prompt=[text_block("echo over sse")])
            assert client.agent_text(sid) == "sse works"
    nodes = await daemon_branch(acp_env, sid)
    assert [(n.name, n.output) for n in nodes if n.role == "code" and n.name.startswith("mcp:")] == \
        [("mcp:h/add", "42"), ("mcp:s/echo", "echo: via sse")]


async def test_a_symlinked_mcp_file_is_refused(acp_env, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"mcpServers": {"x": {"command": "true"}}}))
    (acp_env.work / ".sessiondag").mkdir()
    os.symlink(outside, acp_env.work / ".sessiondag" / "mcp.json")
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        with pytest.raises(RequestError) as e:
            await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        assert e.value.data["kind"] == "config_error" and "mcp.json" in e.value.data["variable"]


async def test_the_daemons_allow_policy_answers_before_the_client_is_asked(acp_env):
    """agent.allow of the daemon's settings grants per tool (mcp:<server>/<tool>), per server
    (mcp:<server>) or every MCP tool (mcp) without a question; what it does not grant still asks."""
    acp_env.script.write_text(ECHO)
    acp_env.env["SESSIONDAG_ALLOW"] = "mcp:t/echo"   # the env of the daemon the ACP process starts
    async with acp_session(acp_env, mcp_servers=[stdio()]) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("echo please")])
        assert client.agent_text(sid) == "the server echoed" and client.permission_requests == []
        client.permission_answers = ["reject_once"]   # not granted by the policy: the client decides
        await conn.prompt(session_id=sid, prompt=[text_block("touch it")])
        assert [r.title for r in client.permission_requests] == ["mcp:t/touch"]
        assert not (acp_env.work / "made.txt").exists()
    acp_env.stop_daemon()
    for allowed in ("mcp:t", "mcp"):
        acp_env.env["SESSIONDAG_ALLOW"] = allowed
        async with acp_session(acp_env, mcp_servers=[stdio()]) as (conn, client, sid):
            await conn.prompt(session_id=sid, prompt=[text_block("where are you")])
            assert client.agent_text(sid) == "found it" and client.permission_requests == []
        acp_env.stop_daemon()
