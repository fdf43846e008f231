"""Client-side file system, sub-agents and the `_sessiondag/` extensions over ACP."""

from __future__ import annotations

import asyncio

import pytest
from acp import RequestError, text_block
from support import RecordingClient, acp_process, acp_session, daemon_branch, new_session
from waiting import until

pytestmark = pytest.mark.anyio

FS_SCRIPT = """\
- match: read the notes
  tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
- match: unsaved buffer text
  text: I saw the editor's buffer.
- match: write the answer
  tool_calls: [{name: write_file, arguments: {path: answer.txt, content: from the agent}}]
- match: wrote
  text: written through the editor
- match: escape
  tool_calls: [{name: read_file, arguments: {path: ../outside.txt}}]
- match: refused
  text: not allowed
"""


async def test_workspace_tools_use_the_client_fs_when_offered(acp_env, tmp_path):
    acp_env.script.write_text(FS_SCRIPT)
    notes = acp_env.work / "notes.txt"
    notes.write_text("text on disk\n")
    (tmp_path / "outside.txt").write_text("secret")
    client = RecordingClient(fs=True)
    client.buffers[str(notes)] = "unsaved buffer text\n"
    async with acp_process(acp_env, client) as conn:
        sid = await new_session(conn, acp_env)
        res = await conn.prompt(session_id=sid, prompt=[text_block("read the notes")])
        assert client.agent_text(sid) == "I saw the editor's buffer." and res.stop_reason == "end_turn"
        assert client.fs_reads == [str(notes)]
        client.clear()
        client.permission_answers = ["allow_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("write the answer")])
        assert client.agent_text(sid) == "written through the editor"
        answer = acp_env.work / "answer.txt"
        assert client.fs_writes == [(str(answer), "from the agent")]
        assert not answer.exists()   # the editor owns the buffer; nothing went to disk behind it
        client.clear()
        reads = len(client.fs_reads)
        await conn.prompt(session_id=sid, prompt=[text_block("escape")])
        assert client.agent_text(sid) == "not allowed"
        assert client.fs_reads[reads:] == []   # refused before any read, through the client or not
        final = client.of("tool_call_update", sid)[-1]
        assert final.status == "failed" and "PathRefusedError" in final.content[0].content.text
    nodes = await daemon_branch(acp_env, sid)
    reads = [n for n in nodes if n.name == "read_file"]
    assert reads[0].output == "unsaved buffer text\n"


async def test_without_client_fs_the_tools_use_the_disk(acp_env):
    acp_env.script.write_text(FS_SCRIPT.replace("unsaved buffer text", "text on disk"))
    (acp_env.work / "notes.txt").write_text("text on disk\n")
    client = RecordingClient(fs=False)
    async with acp_process(acp_env, client) as conn:
        sid = await new_session(conn, acp_env)
        await conn.prompt(session_id=sid, prompt=[text_block("read the notes")])
        assert client.agent_text(sid) == "I saw the editor's buffer." and client.fs_reads == []


SUB_SCRIPT = """\
- match: delegate
  text: Delegating.
  tool_calls: [{name: spawn_agent, arguments: {task: count the files, name: counter}}]
- match: finished
  text: The counter says two files.
- match: spawned sub-agent
  text: Waiting for the counter.
- match: count the files
  text: Listing.
  tool_calls: [{name: list_dir, arguments: {}}]
- match: a.txt
  text: there are 2 files
"""


async def test_a_sub_agent_is_a_tool_call_following_its_spawn_branch(acp_env):
    acp_env.script.write_text(SUB_SCRIPT)
    (acp_env.work / "a.txt").write_text("a")
    (acp_env.work / "b.txt").write_text("b")
    async with acp_session(acp_env) as (conn, client, sid):
        res = await conn.prompt(session_id=sid, prompt=[text_block("delegate")])
        assert res.stop_reason == "end_turn"
        starts = client.of("tool_call", sid)
        spawn = next(s for s in starts if s.title.startswith("Sub-agent counter"))
        assert spawn.kind == "think"
        (inner,) = [s for s in starts if s.tool_call_id != spawn.tool_call_id]
        assert inner.title == "List ." and inner.field_meta["sessiondag"]["parent"] == spawn.tool_call_id
        spawn_updates = [u for u in client.of("tool_call_update", sid) if u.tool_call_id == spawn.tool_call_id]
        streamed = [u.content[0].content.text for u in spawn_updates if u.status is None and u.content]
        assert streamed and "there are 2 files" in streamed[-1]
        assert spawn_updates[-1].status == "completed"
        assert spawn_updates[-1].content[0].content.text == "there are 2 files"
        text = client.agent_text(sid)   # the main turn and the follow-up turn, in order
        assert text.index("Delegating.") < text.index("Waiting for the counter.") < text.index("two files")
        (followup,) = client.of("user_message_chunk", sid)
        assert "[sub-agent 'counter' finished: completed]" in followup.content.text
        client.clear()   # a load replays the spawn call with its result and the sub-agent's tool calls
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        calls = client.of("tool_call", sid)
        assert [c.tool_call_id for c in calls] == [spawn.tool_call_id, inner.tool_call_id]
        assert calls[0].status == "completed" and calls[0].content[0].content.text == "there are 2 files"
        assert calls[1].field_meta["sessiondag"]["parent"] == spawn.tool_call_id
        assert calls[1].status == "completed" and "a.txt" in calls[1].content[0].content.text
    nodes = await daemon_branch(acp_env, sid)
    assert nodes[-1].output == "The counter says two files."   # the follow-up turn is on the branch
    spawn_node = next(n for n in nodes if n.id == spawn.tool_call_id)
    assert spawn_node.metadata["attached"]["result"] == "there are 2 files"


EXT_SCRIPT = """\
- match: first question
  text: first answer
- match: edited question
  text: answer to the edit
"""


async def test_sessiondag_extensions_branches_checkout_fork_graph(acp_env):
    acp_env.script.write_text(EXT_SCRIPT)
    async with acp_session(acp_env) as (conn, client, sid):
        r1 = await conn.prompt(session_id=sid, prompt=[text_block("first question")])
        first_head = r1.field_meta["sessiondag"]["headId"]
        user1 = r1.field_meta["sessiondag"]["userNodeId"]
        br = await conn.ext_method("sessiondag/list_branches", {"sessionId": sid})
        assert br["headId"] == first_head and len(br["branches"]) == 1
        client.clear()
        fork = await conn.ext_method("sessiondag/fork", {"sessionId": sid, "nodeId": user1,
                                                         "content": "edited question"})
        assert fork["stopReason"] == "end_turn" and fork["userNodeId"] != user1
        assert client.agent_text(sid) == "answer to the edit"   # the forked turn streamed
        br = await conn.ext_method("sessiondag/list_branches", {"sessionId": sid})
        assert br["headId"] == fork["headId"] and len(br["branches"]) == 2
        assert {b["headId"] for b in br["branches"]} == {first_head, fork["headId"]}
        nodes = await daemon_branch(acp_env, sid)
        assert [n.output for n in nodes if n.role in ("user", "llm")] == ["edited question", "answer to the edit"]

        edit = await conn.ext_method("sessiondag/fork", {"sessionId": sid, "nodeId": fork["headId"],
                                                         "content": "a better answer"})
        assert edit["headId"] == edit["nodeId"]
        nodes = await daemon_branch(acp_env, sid)
        assert nodes[-1].output == "a better answer" and nodes[-1].metadata["edited_from"] == fork["headId"]

        co = await conn.ext_method("sessiondag/checkout", {"sessionId": sid, "headId": first_head})
        assert co["headId"] == first_head
        nodes = await daemon_branch(acp_env, sid)
        assert nodes[-1].id == first_head
        client.clear()   # a load now replays the checked-out branch
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert [u.content.text for u in client.of("user_message_chunk", sid)] == ["first question"]

        g = await conn.ext_method("sessiondag/graph", {"sessionId": sid})
        assert g["headId"] == first_head
        flat = repr(g["tree"])
        for nid in (user1, first_head, fork["userNodeId"], fork["headId"], edit["nodeId"]):
            assert nid in flat
        with pytest.raises(RequestError) as e:
            await conn.ext_method("sessiondag/checkout", {"sessionId": sid, "headId": "no-such-node"})
        assert e.value.data["kind"] == "not_found"
        with pytest.raises(RequestError) as e:
            await conn.ext_method("sessiondag/fork", {"sessionId": sid})
        assert e.value.code == -32602
        # content blocks are checked as session/prompt's are: a malformed one is -32602, not an
        # internal error, and not silently dropped (a fork with no text)
        for bad in ([{"type": "text", "text": 5}], [7], [{"type": "text"}], [{"type": "image", "data": 3}]):
            with pytest.raises(RequestError) as e:
                await conn.ext_method("sessiondag/fork", {"sessionId": sid, "nodeId": user1, "content": bad})
            assert e.value.code == -32602 and e.value.data["field"] == "content", (bad, e.value)
        assert len((await conn.ext_method("sessiondag/list_branches", {"sessionId": sid}))["branches"]) == 3


HANG_SCRIPT = """\
- match: delegate
  tool_calls: [{name: spawn_agent, arguments: {task: think forever, name: slow}}]
- match: spawned sub-agent
  text: Waiting for the slow one.
- match: think forever
  text: pondering
  hang: true
"""


async def test_cancel_while_waiting_for_a_sub_agent_cancels_it(acp_env):
    acp_env.script.write_text(HANG_SCRIPT)
    async with acp_session(acp_env) as (conn, client, sid):
        task = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("delegate")]))
        # wait until the sub-agent streams and the main turn is over (in either order)
        def streaming() -> bool:
            assert not task.done(), "the prompt answered before its sub-agent finished"
            return (any(u.content and "pondering" in u.content[0].content.text
                        for u in client.of("tool_call_update", sid))
                    and "Waiting for the slow one." in client.agent_text(sid))
        await until(streaming, lambda: f"the sub-agent's stream and the main turn's end; {client.updates}")
        await conn.cancel(session_id=sid)
        res = await asyncio.wait_for(task, 30)
        assert res.stop_reason == "cancelled"
        spawn = next(s for s in client.of("tool_call", sid) if s.kind == "think")
        await until(lambda: any(u.tool_call_id == spawn.tool_call_id and u.status == "failed"
                                for u in client.of("tool_call_update", sid)),   # the sub-agent reports back
                    "the sub-agent's cancellation")
    nodes = await daemon_branch(acp_env, sid)
    assert nodes[-1].status == "cancelled" and nodes[-2].role == "user"   # the follow-up turn ended cancelled
    assert "[sub-agent 'slow' finished: error]" in nodes[-2].output


ASK_SCRIPT = """\
- match: pick a color
  repeat: true
  tool_calls: [{name: ask_user, arguments: {question: 'which color?', options: [red, green]}}]
- match: green
  text: green it is
- match: declined
  text: no answer then
- match: free form
  tool_calls: [{name: ask_user, arguments: {question: 'why?'}}]
- match: free-form
  text: cannot ask that here
"""


async def test_ask_user_with_options_is_a_choice_for_the_user(acp_env):
    acp_env.script.write_text(ASK_SCRIPT)
    async with acp_session(acp_env) as (conn, client, sid):
        client.permission_answers = ["answer-1"]
        await conn.prompt(session_id=sid, prompt=[text_block("pick a color")])
        assert client.agent_text(sid) == "green it is"
        (req,) = client.permission_requests
        (start,) = client.of("tool_call", sid)
        assert req.tool_call_id == start.tool_call_id and req.title == "Ask: which color?"
        client.clear()
        client.permission_answers = ["decline"]
        await conn.prompt(session_id=sid, prompt=[text_block("pick a color")])
        assert client.agent_text(sid) == "no answer then"
        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("free form")])
        assert client.agent_text(sid) == "cannot ask that here" and len(client.permission_requests) == 2
    nodes = await daemon_branch(acp_env, sid)
    asks = [n for n in nodes if n.name == "ask_user"]
    assert [a.status for a in asks] == ["completed", "error", "error"]
