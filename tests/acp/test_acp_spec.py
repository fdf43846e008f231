"""The rest of ACP's stable spec, driven by the official Python SDK client over real pipes:
session modes, the model config option, slash commands, session/delete, and a load's replay with
usage and images."""

from __future__ import annotations

import base64

import pytest
from acp import RequestError, image_block, text_block
from support import RecordingClient, acp_process, acp_session, daemon_branch, new_session

pytestmark = pytest.mark.anyio

MODES = """\
- match: write it
  repeat: true
  tool_calls: [{name: write_file, arguments: {path: out.txt, content: planned}}]
- match: run it
  tool_calls: [{name: run_command, arguments: {command: touch ran.txt}}]
- match: permission
  repeat: true
  text: refused
- match: wrote
  text: written
"""


async def test_modes_plan_refuses_auto_edit_writes_and_commands_still_ask(acp_env):
    acp_env.script.write_text(MODES)
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        new = await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        sid = new.session_id
        assert new.modes.current_mode_id == "ask"
        assert [m.id for m in new.modes.available_modes] == ["ask", "auto-edit", "plan"]
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        (changed,) = client.of("current_mode_update", sid)
        assert changed.current_mode_id == "plan"
        await conn.prompt(session_id=sid, prompt=[text_block("write it")])
        assert client.agent_text(sid) == "refused" and client.permission_requests == []   # refused, not asked
        assert not (acp_env.work / "out.txt").exists()

        client.clear()
        await conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        await conn.prompt(session_id=sid, prompt=[text_block("write it")])
        assert client.agent_text(sid) == "written" and client.permission_requests == []   # allowed, not asked
        assert (acp_env.work / "out.txt").read_text() == "planned"
        client.clear()
        client.permission_answers = ["reject_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("run it")])
        assert len(client.permission_requests) == 1 and not (acp_env.work / "ran.txt").exists()

        with pytest.raises(RequestError) as e:
            await conn.set_session_mode(session_id=sid, mode_id="yolo")
        assert e.value.code == -32602
        with pytest.raises(RequestError) as e:
            await conn.set_session_mode(session_id="s-nope", mode_id="plan")
        assert e.value.code == -32002


async def test_the_model_config_option_records_the_sessions_provider(acp_env):
    alt = acp_env.tmp / "alt.yaml"
    alt.write_text("- repeat: true\n  text: from the alt profile\n")
    acp_env.script.write_text("- repeat: true\n  text: from the default\n")
    cfg = acp_env.tmp / "config.toml"
    cfg.write_text(f'[providers.alt]\nkind = "scripted"\nscript = "{alt}"\n')
    acp_env.env["SESSIONDAG_CONFIG"] = str(cfg)
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        new = await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        sid = new.session_id
        (opt,) = new.config_options
        assert opt.id == "model" and opt.category == "model_config" and opt.current_value == "default"
        assert [o.value for o in opt.options] == ["default", "alt"]
        await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert client.agent_text(sid) == "from the default"
        res = await conn.set_config_option(session_id=sid, config_id="model", value="alt")
        assert res.config_options[0].current_value == "alt"
        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert client.agent_text(sid) == "from the alt profile"
        with pytest.raises(RequestError) as e:
            await conn.set_config_option(session_id=sid, config_id="model", value="nope")
        assert e.value.code == -32602
    other = RecordingClient()   # recorded in the session: another connection's turn uses it too
    async with acp_process(acp_env, other) as conn:
        await conn.resume_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        await conn.prompt(session_id=sid, prompt=[text_block("again")])
        assert other.agent_text(sid) == "from the alt profile"
    llm = [n for n in await daemon_branch(acp_env, sid) if n.role == "llm"]
    assert [n.output for n in llm] == ["from the default", "from the alt profile", "from the alt profile"]


async def test_slash_commands_are_advertised_and_run(acp_env):
    acp_env.script.write_text("- match: first\n  repeat: true\n  text: answer\n  usage: {input_tokens: 7, output_tokens: 3}\n")
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("first question")])
        (cmds,) = client.of("available_commands_update", sid)
        assert {c.name for c in cmds.available_commands} == {"retry", "branches", "checkout", "usage", "restore"}
        client.clear()
        res = await conn.prompt(session_id=sid, prompt=[text_block("/usage")])
        assert res.stop_reason == "end_turn"
        assert client.agent_text(sid) == "7 input + 3 output tokens in 1 model calls on this branch"
        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("/retry")])   # the last message again, on a new branch
        assert client.agent_text(sid) == "answer"
        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("/branches")])
        lines = client.agent_text(sid).splitlines()
        assert len(lines) == 2 and sum(line.startswith("*") for line in lines) == 1
        assert all(line.endswith("(1 turns)") for line in lines), lines   # the row's own count, not "?"
        old = next(line.split()[0] for line in lines if not line.startswith("*"))
        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block(f"/checkout {old}")])
        assert client.agent_text(sid) == f"now on {old}"
    users = [n for n in await daemon_branch(acp_env, sid) if n.role == "user"]
    assert [u.output for u in users] == ["first question"]   # commands are not user messages


async def test_session_delete_removes_the_session(acp_env):
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        assert conn.init.agent_capabilities.session_capabilities.delete is not None
        sid = await new_session(conn, acp_env)
        assert await conn._conn.send_request("session/delete", {"sessionId": sid}) == {}
        assert [s.session_id for s in (await conn.list_sessions(cwd=str(acp_env.work))).sessions] == []
        with pytest.raises(RequestError) as e:
            await conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert e.value.code == -32002
        with pytest.raises(RequestError) as e:
            await conn._conn.send_request("session/delete", {"sessionId": sid})
        assert e.value.code == -32002
    assert not (acp_env.state / "sessions" / sid).exists()


async def test_a_session_deleted_by_another_client_stays_deleted(acp_env):
    """A deletes; B still has the session open. Nothing B does brings the session back (its model
    choice used to open it again under the same id, so a second delete answered {}): every request
    is -32002, and so is each further delete."""
    acp_env.script.write_text("- repeat: true\n  text: hi\n")
    a, b = RecordingClient(), RecordingClient()
    async with acp_process(acp_env, a) as ca, acp_process(acp_env, b) as cb:
        sid = await new_session(ca, acp_env)
        gone = acp_env.state / "sessions" / sid
        await ca.prompt(session_id=sid, prompt=[text_block("hello")])
        await cb.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert await ca._conn.send_request("session/delete", {"sessionId": sid}) == {}
        for attempt in (lambda: cb.set_config_option(session_id=sid, config_id="model", value="default"),
                        lambda: cb.prompt(session_id=sid, prompt=[text_block("hello")]),
                        lambda: cb.set_session_mode(session_id=sid, mode_id="plan"),
                        lambda: ca._conn.send_request("session/delete", {"sessionId": sid}),
                        lambda: cb._conn.send_request("session/delete", {"sessionId": sid})):
            with pytest.raises(RequestError) as e:
                await attempt()
            assert e.value.code == -32002
            assert not gone.exists()
        assert [s.session_id for s in (await cb.list_sessions()).sessions] == []


async def test_load_replays_usage_and_images_as_images(acp_env):
    acp_env.script.write_text("- repeat: true\n  text: a nice picture\n  usage: {input_tokens: 30, output_tokens: 5}\n")
    png = base64.b64encode(b"\x89PNG\r\n\x1a\nfake image").decode()
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("look"), image_block(data=png, mime_type="image/png")])
        live_usage = [u.used for u in client.of("usage_update", sid)]
        client.clear()
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        user = client.of("user_message_chunk", sid)
        assert [u.content.type for u in user] == ["text", "image"] and user[0].content.text == "look"
        assert user[1].content.data == png and user[1].content.mime_type == "image/png"
        assert [u.used for u in client.of("usage_update", sid)] == live_usage == [35]
        kinds = [u.session_update for _, u in client.updates if u.session_update != "available_commands_update"]
        assert kinds == ["user_message_chunk", "user_message_chunk", "agent_message_chunk", "usage_update"]
