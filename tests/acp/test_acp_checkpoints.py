"""`_sessiondag/restore` and `_sessiondag/diff` through a real `sessiondag acp` process and its daemon."""

from __future__ import annotations

import pytest
from acp import RequestError, text_block
from support import RecordingClient, acp_process, daemon_branch, new_session

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: one
  tool_calls: [{name: run_command, arguments: {command: "echo one > f.txt"}}]
- match: two
  tool_calls: [{name: run_command, arguments: {command: "echo two > f.txt"}}]
- repeat: true
  text: done
"""


async def test_restore_and_diff_extensions(acp_env):
    acp_env.script.write_text(SCRIPT)
    client = RecordingClient()
    client.permission_answers = ["allow_once", "allow_once"]
    async with acp_process(acp_env, client) as conn:
        sid = await new_session(conn, acp_env)
        r1 = await conn.prompt(session_id=sid, prompt=[text_block("one")])
        r2 = await conn.prompt(session_id=sid, prompt=[text_block("two")])
        h1, h2 = r1.field_meta["sessiondag"]["headId"], r2.field_meta["sessiondag"]["headId"]
        assert (acp_env.work / "f.txt").read_text() == "two\n"
        d = await conn.ext_method("sessiondag/diff", {"sessionId": sid, "from": h1, "to": h2})
        (f,) = d["files"]
        assert f["path"] == "f.txt" and "+two" in f["diff"] and f["newBlob"]
        assert r2.field_meta["sessiondag"]["userNodeId"] in d["nodes"]["onlyInTo"]
        dry = await conn.ext_method("sessiondag/restore", {"sessionId": sid, "nodeId": h1, "dryRun": True})
        assert dry["dryRun"] and dry["files"]["changes"] == [{"path": "f.txt", "change": "write"}]
        out = await conn.ext_method("sessiondag/restore", {"sessionId": sid, "nodeId": h1})
        assert (acp_env.work / "f.txt").read_text() == "one\n" and out["files"]["undo"]["id"]
        (acp_env.work / "mine.txt").write_text("mine\n")
        with pytest.raises(RequestError) as e:
            await conn.ext_method("sessiondag/restore", {"sessionId": sid, "undo": True})
        assert e.value.data["kind"] == "workspace_dirty" and e.value.data["paths"] == ["mine.txt"]
        with pytest.raises(RequestError):
            await conn.ext_method("sessiondag/restore", {"sessionId": sid, "force": "yes"})


BEFORE = """\
- match: one
  tool_calls: [{name: write_file, arguments: {path: f.txt, content: v1}}]
- match: two
  tool_calls: [{name: run_command, arguments: {command: "echo ran > r.txt"}},
               {name: write_file, arguments: {path: f.txt, content: v2}},
               {name: write_file, arguments: {path: g.txt, content: new}}]
- repeat: true
  text: done
"""


async def test_restore_to_just_before_a_tool_call_by_its_tool_call_id(acp_env):
    """ACP has no restore: `_sessiondag/restore {before}` and `/restore <toolCallId> before` (the
    tool call id is the node id) put the files back as they were just before that call ran."""
    acp_env.script.write_text(BEFORE)
    client = RecordingClient()
    client.permission_answers = ["allow_always", "allow_always"]   # write_file, run_command
    w = acp_env.work
    async with acp_process(acp_env, client) as conn:
        sid = await new_session(conn, acp_env)
        one = await conn.prompt(session_id=sid, prompt=[text_block("one")])
        await conn.prompt(session_id=sid, prompt=[text_block("two")])
        ids = {str(sorted(u.raw_input.values())): u.tool_call_id for u in client.of("tool_call", sid)}
        run, v2, g = ids["['echo ran > r.txt']"], ids["['f.txt', 'v2']"], ids["['g.txt', 'new']"]
        assert (w / "f.txt").read_text() == "v2" and (w / "g.txt").read_text() == "new"

        client.clear()
        res = await conn.prompt(session_id=sid, prompt=[text_block(f"/restore {g} before dry-run")])
        assert res.field_meta["sessiondag"]["command"] == "restore"
        # r.txt: run_command's effect is not recorded, so the turn's starting snapshot (no r.txt) says
        assert client.agent_text(sid).splitlines()[1:] == [
            "  delete g.txt", "  delete r.txt",
            f"not recorded, so as the turn's start left them: what tool calls {run} changed"]
        assert (w / "g.txt").exists()   # a dry run changes nothing
        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block(f"/restore {g} --before")])
        text = client.agent_text(sid)
        assert text.startswith(f"restored the files to just before {g}") and text.endswith("undo with: /restore undo")
        assert (w / "f.txt").read_text() == "v2" and not (w / "g.txt").exists()   # v2 was written, g not yet
        assert not (w / "r.txt").exists()

        out = await conn.ext_method("sessiondag/restore", {"sessionId": sid, "nodeId": v2, "before": True})
        assert (w / "f.txt").read_text() == "v1" and out["files"]["before"]["unknown"] == [run]
        assert out["files"]["changes"] == [{"path": "f.txt", "change": "write"}]

        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("/restore undo")])
        assert client.agent_text(sid).startswith("restored the files to the newest undo point")
        assert (w / "f.txt").read_text() == "v2" and not (w / "g.txt").exists()
        for bad in ("/restore", "/restore x files both", "/restore undo x", "/restore x --sideways"):
            with pytest.raises(RequestError) as e:
                await conn.prompt(session_id=sid, prompt=[text_block(bad)])
            assert e.value.code == -32602 and "/restore" in str(e.value)
        with pytest.raises(RequestError):
            await conn.ext_method("sessiondag/restore", {"sessionId": sid, "nodeId": v2, "before": "yes"})

        client.clear()   # the conversation: HEAD goes back to the end of turn one, the next prompt forks there
        h1 = one.field_meta["sessiondag"]["headId"]
        await conn.prompt(session_id=sid, prompt=[text_block(f"/restore {h1} conversation")])
        assert client.agent_text(sid) == f"continuing the conversation from {h1} (the next prompt forks there)"
        assert (w / "f.txt").read_text() == "v2"   # conversation only: the files stay
        res = await conn.prompt(session_id=sid, prompt=[text_block("three")])
    nodes = await daemon_branch(acp_env, sid)
    assert [n.output for n in nodes if n.role == "user" and n.caller == "ROOT"] == ["one", "three"]
    assert res.field_meta["sessiondag"]["userNodeId"] == nodes[-2].id
