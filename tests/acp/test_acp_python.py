"""`sessiondag acp` driven over real pipes by the official Python SDK's client side, with a real
daemon the ACP process auto-starts (scripted provider: deterministic turns)."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from acp import RequestError, text_block
from sessiondag_client import connect
from support import RecordingClient, acp_process, acp_session, cli_json, daemon_branch, new_session
from waiting import until

pytestmark = pytest.mark.anyio

LONG = "The answer streams in several chunks: " + "abcdefghij" * 5


async def test_initialize_new_prompt_streams_and_the_daemon_sees_the_same_nodes(acp_env):
    acp_env.script.write_text(f"- match: hello\n  text: '{LONG}'\n  usage: {{input_tokens: 40, output_tokens: 12}}\n")
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        caps = conn.init.agent_capabilities
        assert conn.init.protocol_version == 1 and caps.load_session
        sc = caps.session_capabilities
        assert sc.list is not None and sc.resume is not None and sc.close is not None and sc.fork is not None
        assert caps.prompt_capabilities.embedded_context and caps.prompt_capabilities.image
        assert "_sessiondag/fork" in caps.field_meta["sessiondag"]["extensions"]
        new = await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        sid = new.session_id
        res = await conn.prompt(session_id=sid, prompt=[text_block("hello there")])
        assert res.stop_reason == "end_turn"
        assert res.usage.input_tokens == 40 and res.usage.output_tokens == 12
        chunks = client.of("agent_message_chunk", sid)
        assert len(chunks) > 1 and client.agent_text(sid) == LONG
        usage = client.of("usage_update", sid)
        assert usage and usage[-1].used == 52 and usage[-1].size >= 52
        head = res.field_meta["sessiondag"]["headId"]
    nodes = await daemon_branch(acp_env, sid)
    assert nodes[-1].id == head and nodes[-1].role == "llm" and nodes[-1].output == LONG
    assert {c.message_id for c in chunks} == {head}
    user = [n for n in nodes if n.role == "user"]
    assert len(user) == 1 and user[0].output == "hello there"
    show = cli_json(acp_env, "show", sid)
    assert show["head_id"] == head and show["working_dir"] == str(acp_env.work)
    log = cli_json(acp_env, "log", sid)
    assert [r["id"] for r in log] == [n.id for n in nodes if n.id in {r["id"] for r in log}]
    assert {r["id"] for r in log} >= {user[0].id, head}


WRITE_SCRIPT = """\
- match: write it
  repeat: true
  tool_calls: [{name: write_file, arguments: {path: out.txt, content: v1}}]
- match: edit it
  tool_calls: [{name: edit_file, arguments: {path: out.txt, old: v1, new: v2}}]
- match: permission
  repeat: true
  text: refused
- match: wrote
  repeat: true
  text: done
- match: edited
  text: edited too
"""


async def test_permission_refused_writes_nothing_then_allow_always_is_remembered(acp_env):
    acp_env.script.write_text(WRITE_SCRIPT)
    client = RecordingClient()
    out = acp_env.work / "out.txt"
    async with acp_process(acp_env, client) as conn:
        sid = await new_session(conn, acp_env)
        client.permission_answers = ["reject_once"]
        res = await conn.prompt(session_id=sid, prompt=[text_block("write it")])
        assert res.stop_reason == "end_turn" and client.agent_text(sid) == "refused"
        assert not out.exists()
        (req,) = client.permission_requests
        (start,) = client.of("tool_call", sid)
        assert req.tool_call_id == start.tool_call_id and start.kind == "edit" and start.title == "Write out.txt"
        assert start.locations[0].path == str(out)
        final = client.of("tool_call_update", sid)[-1]
        assert final.tool_call_id == start.tool_call_id and final.status == "failed"

        client.clear()
        client.permission_answers = ["allow_always"]
        res = await conn.prompt(session_id=sid, prompt=[text_block("write it")])
        assert client.agent_text(sid) == "done" and out.read_text() == "v1"
        final = client.of("tool_call_update", sid)[-1]
        assert final.status == "completed"
        (diff,) = final.content
        assert diff.type == "diff" and diff.path == str(out) and diff.old_text is None and diff.new_text == "v1"

        client.clear()   # "always" is remembered for write_file in this session: no question
        res = await conn.prompt(session_id=sid, prompt=[text_block("write it")])
        assert len(client.permission_requests) == 2 and client.agent_text(sid) == "done"

        client.permission_answers = ["allow_once"]   # edit_file is another tool: asked
        client.clear()
        res = await conn.prompt(session_id=sid, prompt=[text_block("edit it")])
        assert len(client.permission_requests) == 3 and out.read_text() == "v2"
        (diff,) = client.of("tool_call_update", sid)[-1].content
        assert (diff.old_text, diff.new_text) == ("v1", "v2")


async def test_cancel_ends_the_turn_cancelled_and_committed(acp_env):
    acp_env.script.write_text("- match: wait\n  repeat: true\n  text: thinking about it\n  hang: true\n")
    async with acp_session(acp_env) as (conn, client, sid):
        task = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("wait for me")]))
        await until(lambda: client.of("agent_message_chunk", sid), "the first chunk of the turn")
        await conn.cancel(session_id=sid)
        res = await asyncio.wait_for(task, 30)
        assert res.stop_reason == "cancelled"
        assert res.field_meta["sessiondag"]["stopReason"] == "cancelled"
        client.clear()   # session/close ends what runs for the session too
        task = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("wait again")]))
        await until(lambda: client.of("agent_message_chunk", sid), "the first chunk of the turn")
        await conn.close_session(session_id=sid)
        assert (await asyncio.wait_for(task, 30)).stop_reason == "cancelled"
    nodes = await daemon_branch(acp_env, sid)
    assert nodes[-1].role == "llm" and nodes[-1].status == "cancelled" and nodes[-1].output == "thinking about it"
    assert [n.status for n in nodes if n.role == "llm"] == ["cancelled", "cancelled"]
    git = acp_env.state / "sessions" / sid / "git"
    log = subprocess.run(["git", "--git-dir", str(git), "log", "--oneline"], capture_output=True, text=True,
                         check=True).stdout
    assert len(log.splitlines()) >= 2   # each cancelled turn is a commit


async def test_malformed_prompt_params_and_unknown_session_are_errors(acp_env):
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        with pytest.raises(RequestError) as e:
            await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])
        assert e.value.code == -32002 and e.value.data["kind"] == "not_found"
        with pytest.raises(RequestError) as e:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert e.value.code == -32602 and e.value.data["field"] == "cwd"
        with pytest.raises(RequestError) as e:
            await conn.ext_method("sessiondag/nope", {"sessionId": "x"})
        assert e.value.code == -32601
        sid = await new_session(conn, acp_env)
        assert sid


async def test_a_failed_turn_is_reported_and_committed(acp_env):
    acp_env.script.write_text("- match: fail\n  text: partial answer\n  error: the model fell over\n")
    async with acp_session(acp_env) as (conn, client, sid):
        res = await conn.prompt(session_id=sid, prompt=[text_block("fail please")])
        meta = res.field_meta["sessiondag"]
        assert res.stop_reason == "end_turn" and meta["stopReason"] == "error"
        assert meta["error"]["message"] == "the model fell over"
        assert client.agent_text(sid).startswith("partial answer")
        assert client.agent_text(sid).endswith("error: ProviderError: the model fell over")
    nodes = await daemon_branch(acp_env, sid)
    assert nodes[-1].status == "error" and nodes[-1].output == "partial answer"


async def test_cancel_refuses_a_permission_the_client_never_answers(acp_env):
    acp_env.script.write_text("- match: write it\n  tool_calls: [{name: write_file, arguments: {path: out.txt, "
                              "content: v1}}]\n")
    client = RecordingClient()
    asked = asyncio.Event()

    async def never(tool_call):
        asked.set()
        await asyncio.Event().wait()   # a client that does not answer, not even `cancelled`
    client.on_permission = never
    async with acp_process(acp_env, client) as conn:
        sid = await new_session(conn, acp_env)
        task = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("write it")]))
        await asyncio.wait_for(asked.wait(), 30)
        await conn.cancel(session_id=sid)
        res = await asyncio.wait_for(task, 30)
        assert res.stop_reason == "cancelled"
    assert not (acp_env.work / "out.txt").exists()
    nodes = await daemon_branch(acp_env, sid)
    tool = next(n for n in nodes if n.name == "write_file")
    assert tool.status in ("error", "cancelled") and nodes[-1].status == "cancelled"


async def test_prompt_content_blocks_become_the_user_node(acp_env):
    import base64
    from acp import embedded_text_resource, image_block, resource_block, resource_link_block
    acp_env.script.write_text("- repeat: true\n  text: seen\n")
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
    async with acp_session(acp_env) as (conn, client, sid):
        blocks = [text_block("look at these"),
                  resource_link_block(name="main.py", uri=f"file://{acp_env.work}/main.py"),
                  resource_block(embedded_text_resource(uri=f"file://{acp_env.work}/a.txt", text="alpha")),
                  image_block(data=png, mime_type="image/png")]
        res = await conn.prompt(session_id=sid, prompt=blocks)
        assert res.stop_reason == "end_turn"
        client.clear()
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        user, shown = client.of("user_message_chunk", sid)   # the text, then the image as an image
    nodes = await daemon_branch(acp_env, sid)
    (u,) = [n for n in nodes if n.role == "user"]
    text, image = u.output
    assert text["type"] == "text" and text["text"].startswith("look at these\n\n[resource: main.py <file://")
    assert f'<resource uri="file://{acp_env.work}/a.txt">\nalpha\n</resource>' in text["text"]
    assert image["type"] == "image" and image["media_type"] == "image/png" and image["size"] == 12
    assert user.content.text.startswith("look at these") and "[attachment" not in user.content.text
    assert shown.content.type == "image" and shown.content.data == png and shown.content.mime_type == "image/png"


async def test_no_daemon_and_no_auto_start_is_a_typed_error(acp_env):
    client = RecordingClient()
    async with acp_process(acp_env, client, "--no-auto-start") as conn:
        for _ in range(2):   # and it keeps answering
            with pytest.raises(RequestError) as e:
                await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
            assert e.value.code == -32603 and e.value.data["kind"] == "daemon_unavailable"
    assert acp_env.daemon_pid() is None
