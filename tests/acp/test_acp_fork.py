"""ACP `session/fork` (unstable in the pinned SDKs, advertised as sessionCapabilities.fork): the
fork is a new ACP session on a real branch of the same sessiondag session. Each goes on along its
own branch, the daemon's HEAD stays with the original, and a fork loads again after the ACP
process and the daemon restarted. Driven by the official Python SDK client."""

from __future__ import annotations

import pytest
from acp import RequestError, text_block
from support import RecordingClient, acp_process, daemon_branch, new_session

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: first
  text: first answer
- match: in the fork
  text: fork answer
- match: in the original
  text: original answer
- match: fork again
  text: second fork answer
"""


def said(nodes):
    return [(n.role, n.output) for n in nodes if (n.role == "user" and n.caller == "ROOT") or n.role == "llm"]


async def test_a_fork_is_a_branch_that_goes_its_own_way(acp_env):
    acp_env.script.write_text(SCRIPT)
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        assert conn.init.agent_capabilities.session_capabilities.fork is not None
        sid = await new_session(conn, acp_env)
        await conn.prompt(session_id=sid, prompt=[text_block("first")])
        forked = await conn.fork_session(session_id=sid, cwd=str(acp_env.work), mcp_servers=[])
        fid = forked.session_id
        assert fid != sid and fid.startswith(sid + "~")
        assert forked.modes.current_mode_id == "ask" and forked.config_options[0].id == "model"
        client.clear()
        await conn.prompt(session_id=fid, prompt=[text_block("in the fork")])
        assert client.agent_text(fid) == "fork answer" and client.agent_text(sid) == ""
        await conn.prompt(session_id=sid, prompt=[text_block("in the original")])
        assert client.agent_text(sid) == "original answer"
        await conn.prompt(session_id=fid, prompt=[text_block("fork again")])
        branches = await conn._conn.send_request("_sessiondag/list_branches", {"sessionId": sid})
        named = {b["name"]: b["headId"] for b in branches["branches"]}
        assert len(branches["branches"]) == 2 and forked.field_meta["sessiondag"]["branchName"] in named
    head = await daemon_branch(acp_env, sid)   # HEAD stayed with the original
    assert said(head) == [("user", "first"), ("llm", "first answer"),
                          ("user", "in the original"), ("llm", "original answer")]
    acp_env.stop_daemon()
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:   # a new ACP process and a new daemon
        await conn.load_session(cwd=str(acp_env.work), session_id=fid, mcp_servers=[])
        texts = [u.content.text for u in client.of("user_message_chunk", fid)]
        assert texts == ["first", "in the fork", "fork again"]
        await conn.resume_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        again = await conn.fork_session(session_id=fid, cwd=str(acp_env.work), mcp_servers=[])
        assert again.field_meta["sessiondag"]["headId"] == named[forked.field_meta["sessiondag"]["branchName"]]
        with pytest.raises(RequestError) as e:   # a fork follows its own branch
            await conn.prompt(session_id=fid, prompt=[text_block("/checkout x")])
        assert e.value.code == -32602
        assert await conn._conn.send_request("session/delete", {"sessionId": fid}) == {}
        with pytest.raises(RequestError) as e:
            await conn._conn.send_request("session/delete", {"sessionId": fid})
        assert e.value.code == -32002
        with pytest.raises(RequestError) as e:
            await conn.fork_session(session_id=sid + "~nope~x", cwd=str(acp_env.work), mcp_servers=[])
        assert e.value.code == -32002
