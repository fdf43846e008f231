"""Issue 24's defects, driven by the official Python SDK client over real pipes: rawOutput is an
object live and in replay, a write's permission request carries its diff and leaves the status
alone, a missing session is ACP's -32002, session/list's updatedAt is the last activity, an audio
block is refused, and so is a protocolVersion that is not an integer."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from acp import RequestError, audio_block, text_block
from support import RecordingClient, acp_process, acp_session, daemon_branch, new_session
from test_acp_wire import raw_acp

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: write it
  tool_calls: [{name: write_file, arguments: {path: notes.txt, content: new text}}]
- match: wrote
  text: written
- match: read a missing file
  tool_calls: [{name: read_file, arguments: {path: missing.txt}}]
- match: FileNotFoundError
  text: it is not there
- match: hi
  repeat: true
  text: hello
"""


async def test_raw_output_is_an_object_live_and_in_replay(acp_env):
    acp_env.script.write_text(SCRIPT)
    (acp_env.work / "notes.txt").write_text("old text\n")
    async with acp_session(acp_env) as (conn, client, sid):
        client.permission_answers = ["allow_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("write it")])
        await conn.prompt(session_id=sid, prompt=[text_block("read a missing file")])
        live = [u for u in client.of("tool_call_update", sid) if u.status in ("completed", "failed")]
        assert [u.raw_output["output"] for u in live][0] == "wrote 8 bytes to notes.txt"
        assert live[0].raw_output["error"] is None
        assert live[1].status == "failed" and live[1].raw_output["error"]["type"] == "FileNotFoundError"
        assert all(isinstance(u.raw_output, dict) for u in client.of("tool_call_update", sid) if u.raw_output)
        client.clear()
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        replayed = client.of("tool_call", sid)
        assert [u.status for u in replayed] == ["completed", "failed"]
        assert [u.raw_output for u in replayed] == [u.raw_output for u in live]
        (diff,) = replayed[0].content
        assert diff.type == "diff" and diff.new_text == "new text"


async def test_a_write_permission_request_carries_its_diff_and_the_status_stays(acp_env):
    acp_env.script.write_text(SCRIPT)
    notes = acp_env.work / "notes.txt"
    notes.write_text("old text\n")
    async with acp_session(acp_env) as (conn, client, sid):
        client.permission_answers = ["reject_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("write it")])
        (req,) = client.permission_requests
        (diff,) = req.content
        assert diff.type == "diff" and diff.path == str(notes)
        assert (diff.old_text, diff.new_text) == ("old text\n", "new text")
        assert req.status is None   # the call is in_progress; asking does not make it pending again
        (start,) = client.of("tool_call", sid)
        assert start.status == "in_progress" and req.tool_call_id == start.tool_call_id
        seen = [start.status] + [u.status for u in client.of("tool_call_update", sid) if u.status]
        assert "pending" not in seen and seen[-1] == "failed"
    assert notes.read_text() == "old text\n"


async def test_a_missing_session_is_resource_not_found_with_our_code_in_data(acp_env):
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        with pytest.raises(RequestError) as e:
            await conn.prompt(session_id="s-nope", prompt=[text_block("hi")])
        assert e.value.code == -32002 and e.value.data["code"] == -32014 and e.value.data["kind"] == "not_found"
        with pytest.raises(RequestError) as e:
            await conn.load_session(cwd=str(acp_env.work), session_id="s-never-made", mcp_servers=[])
        assert e.value.code == -32002 and e.value.data["code"] == -32018 and e.value.data["reason"] == "missing"
        with pytest.raises(RequestError) as e:   # a mismatch is not "not found": our code as it was
            sid = await new_session(conn, acp_env)
            await conn.load_session(cwd=str(acp_env.tmp), session_id=sid, mcp_servers=[])
        assert e.value.code == -32018 and e.value.data["reason"] == "working_dir_mismatch"


async def test_session_list_updated_at_is_the_last_activity(acp_env):
    acp_env.script.write_text(SCRIPT)
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        first = await new_session(conn, acp_env)
        second = await new_session(conn, acp_env)
        await conn.prompt(session_id=first, prompt=[text_block("hi")])
        rows = (await conn.list_sessions(cwd=str(acp_env.work))).sessions
    assert [r.session_id for r in rows] == [first, second]   # the one used last comes first
    nodes = await daemon_branch(acp_env, first)
    updated = datetime.fromisoformat(rows[0].updated_at).timestamp()
    assert updated >= max(n.created_at for n in nodes)       # not the creation time: after its last node


async def test_an_audio_block_is_refused_and_nothing_is_written(acp_env):
    acp_env.script.write_text(SCRIPT)
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        assert conn.init.agent_capabilities.prompt_capabilities.audio is False
        sid = await new_session(conn, acp_env)
        with pytest.raises(RequestError) as e:
            await conn.prompt(session_id=sid, prompt=[text_block("hi"), audio_block(data="AAAA", mime_type="audio/wav")])
        assert e.value.code == -32602 and e.value.data["index"] == 1
    assert await daemon_branch(acp_env, sid) == []


async def test_a_protocol_version_that_is_not_an_integer_is_refused(acp_env):
    async with raw_acp(acp_env) as raw:
        for rid, version in ((1, "1"), (2, "2024-11-05"), (3, True), (4, None)):
            await raw.request(rid, "initialize", {"protocolVersion": version, "clientCapabilities": {}})
            m = await raw.answer(rid)
            assert m["error"]["code"] == -32602 and "protocolVersion" in m["error"]["message"], json.dumps(m)
        await raw.request(5, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert (await raw.answer(5))["result"]["protocolVersion"] == 1
