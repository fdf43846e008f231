"""Session lifecycle over ACP: load after the ACP process and the daemon restarted (the replay is
the branch), resume without replay, list with paging, close, and a working-dir mismatch."""

from __future__ import annotations

import pytest
from acp import RequestError, text_block
from support import RecordingClient, acp_process, acp_session, cli_branch, cli_json, daemon_branch, new_session
from waiting import until

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: look at the notes
  text: Let me read them.
  tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
- match: remember the milk
  text: The notes say to remember the milk.
- match: second
  text: second answer
"""


def expected_replay(nodes):
    """(update kind, id) per branch node the replay must show, in order."""
    out = []
    for n in nodes:
        if n.role == "user" and n.caller == "ROOT":
            out.append(("user_message_chunk", n.id))
        elif n.role == "llm" and n.output:
            out.append(("agent_message_chunk", n.id))
        elif n.role == "code" and "tool_call_id" in n.metadata:
            out.append(("tool_call", n.id))
    return out


REPLAYED = ("user_message_chunk", "agent_message_chunk", "tool_call")   # (usage and commands aside)


def replay_of(client, sid):
    out = []
    for s, u in client.updates:
        assert s == sid
        if u.session_update not in REPLAYED:
            continue
        ident = u.tool_call_id if u.session_update == "tool_call" else u.message_id
        out.append((u.session_update, ident))
    return out


async def test_load_after_acp_and_daemon_restart_replays_the_branch(acp_env):
    acp_env.script.write_text(SCRIPT)
    (acp_env.work / "notes.txt").write_text("remember the milk\n")
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("look at the notes")])
        await conn.prompt(session_id=sid, prompt=[text_block("second")])
        live_tools = [u for u in client.of("tool_call_update", sid) if u.status == "completed"]
        assert live_tools and live_tools[0].content[0].content.text == "remember the milk\n"
    first_pid = acp_env.daemon_pid()
    acp_env.stop_daemon()
    nodes = await daemon_branch(acp_env, sid)   # a plain client on a fresh daemon: nothing lost
    acp_env.stop_daemon()

    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        res = await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert acp_env.daemon_pid() not in (None, first_pid)   # the ACP process started a new daemon
        assert res.field_meta["sessiondag"]["headId"] == nodes[-1].id
        assert replay_of(client, sid) == expected_replay(nodes)
        texts = [u.content.text for u in client.of("user_message_chunk", sid)]
        assert texts == ["look at the notes", "second"]
        assert client.agent_text(sid) == "Let me read them.The notes say to remember the milk.second answer"
        (tool,) = client.of("tool_call", sid)
        assert tool.status == "completed" and tool.kind == "read" and tool.raw_input == {"path": "notes.txt"}
        assert tool.content[0].content.text == "remember the milk\n"
        assert tool.locations[0].path == str(acp_env.work / "notes.txt")
        # the loaded session goes on from its head (the new daemon read the script afresh)
        res = await conn.prompt(session_id=sid, prompt=[text_block("second again")])
        assert res.stop_reason == "end_turn"
    after = await daemon_branch(acp_env, sid)
    assert [n.id for n in after[:len(nodes)]] == [n.id for n in nodes]
    assert after[len(nodes)].role == "user" and after[len(nodes)].predecessor == nodes[-1].id
    # the same session through the CLI: identical nodes, in order, with their status
    assert cli_branch(acp_env, sid) == [(n.id, n.status) for n in after if not n.name.startswith("context/")]
    assert cli_json(acp_env, "show", sid)["head_id"] == after[-1].id


async def test_resume_list_close_and_working_dir_mismatch(acp_env, tmp_path):
    acp_env.script.write_text("- repeat: true\n  text: ok\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    client = RecordingClient()
    async with acp_process(acp_env, client, "--page-size", "2") as conn:
        sids = [await new_session(conn, acp_env) for _ in range(3)]
        await conn.prompt(session_id=sids[0], prompt=[text_block("first session title")])
        foreign = await new_session(conn, acp_env, other)
        page1 = await conn.list_sessions(cwd=str(acp_env.work))
        assert len(page1.sessions) == 2 and page1.next_cursor
        page2 = await conn.list_sessions(cwd=str(acp_env.work), cursor=page1.next_cursor)
        assert len(page2.sessions) == 1 and page2.next_cursor is None
        listed = page1.sessions + page2.sessions
        assert sorted(s.session_id for s in listed) == sorted(sids)
        assert all(s.cwd == str(acp_env.work) for s in listed)
        assert {s.title for s in listed if s.session_id == sids[0]} == {"first session title"}
        everything = []
        cursor = None
        while True:
            page = await conn.list_sessions(cursor=cursor)
            everything += [s.session_id for s in page.sessions]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert sorted(everything) == sorted(sids + [foreign])
        with pytest.raises(RequestError) as e:
            await conn.list_sessions(cursor="not-a-cursor")
        assert e.value.code == -32602

    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        with pytest.raises(RequestError) as e:
            await conn.resume_session(cwd=str(other), session_id=sids[0], mcp_servers=[])
        assert e.value.data["kind"] == "session_resume" and e.value.data["reason"] == "working_dir_mismatch"
        with pytest.raises(RequestError) as e:
            await conn.load_session(cwd=str(other), session_id=sids[0], mcp_servers=[])
        assert e.value.data["reason"] == "working_dir_mismatch"
        with pytest.raises(RequestError) as e:
            await conn.load_session(cwd=str(acp_env.work), session_id="s-does-not-exist", mcp_servers=[])
        assert e.value.data["kind"] == "session_resume" and e.value.data["reason"] == "missing"
        with pytest.raises(RequestError):   # nothing was opened by the refusals
            await conn.prompt(session_id=sids[0], prompt=[text_block("hi")])
        assert client.updates == []

        await conn.resume_session(cwd=str(acp_env.work), session_id=sids[0], mcp_servers=[])
        # resume does not replay (at most the slash commands are sent again)
        assert {u.session_update for _, u in client.updates} <= {"available_commands_update"}
        res = await conn.prompt(session_id=sids[0], prompt=[text_block("again")])
        assert res.stop_reason == "end_turn" and client.agent_text(sids[0]) == "ok"
        nodes = await daemon_branch(acp_env, sids[0])
        assert [n.output for n in nodes if n.role == "user"] == ["first session title", "again"]

        await conn.close_session(session_id=sids[0])
        with pytest.raises(RequestError) as e:
            await conn.prompt(session_id=sids[0], prompt=[text_block("after close")])
        assert e.value.data["kind"] == "not_found"


async def test_corrupt_session_is_a_typed_error_not_a_new_session(acp_env):
    acp_env.script.write_text("- repeat: true\n  text: ok\n")
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("hi")])
    acp_env.stop_daemon()
    sdir = acp_env.state / "sessions" / sid
    (sdir / "session.json").write_text("{ not json")
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        with pytest.raises(RequestError) as e:
            await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert e.value.data["kind"] == "session_resume" and e.value.data["reason"] == "corrupt"
        page = await conn.list_sessions(cwd=str(acp_env.work))
        assert sid not in [s.session_id for s in page.sessions]


async def test_the_daemon_restarting_under_a_running_acp_process(acp_env):
    acp_env.script.write_text("- repeat: true\n  text: ok\n")
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("one")])
        first = acp_env.daemon_pid()
        acp_env.stop_daemon()
        res = await conn.prompt(session_id=sid, prompt=[text_block("two")])   # reconnects, auto-starts
        assert res.stop_reason == "end_turn" and acp_env.daemon_pid() not in (None, first)
        assert client.agent_text(sid) == "okok"
    nodes = await daemon_branch(acp_env, sid)
    assert [n.output for n in nodes if n.role == "user"] == ["one", "two"]


async def test_another_clients_turn_shows_up_live(acp_env):
    """The ACP client sees a turn that another client (here: the daemon's own protocol, as the editor
    plugins use it) runs on the same session, while no prompt of its own runs."""
    from sessiondag_client import connect
    acp_env.script.write_text("- match: from elsewhere\n  text: Reading.\n"
                              "  tool_calls: [{name: read_file, arguments: {path: notes.txt}}]\n"
                              "- match: shared\n  text: the notes say shared\n")
    (acp_env.work / "notes.txt").write_text("shared\n")
    async with acp_session(acp_env) as (conn, client, sid):
        other = await connect(state_dir=str(acp_env.state))
        try:
            r = await other.agent_prompt(session_id=sid, content="from elsewhere")
            assert r["stop_reason"] == "end_turn"
        finally:
            await other.aclose()
        await until(lambda: "the notes say shared" in client.agent_text(sid), lambda: repr(client.updates))
        (user,) = client.of("user_message_chunk", sid)
        assert user.content.text == "from elsewhere" and user.message_id == r["user_node_id"]
        assert client.agent_text(sid) == "Reading.the notes say shared"
        (call,) = client.of("tool_call", sid)
        final = [u for u in client.of("tool_call_update", sid) if u.tool_call_id == call.tool_call_id][-1]
        assert call.title == "Read notes.txt" and final.status == "completed"
        assert final.content[0].content.text == "shared\n"
        assert client.agent_text(sid).count("Reading.") == 1   # nothing twice
