"""A write's tool-call diff comes from the blobs its node recorded just before and after the call
(metadata.workspace_files, the daemon's session/tool_diff), live and in a load's replay: the text
the file really had, also for an overwrite or an edit replayed long after (issue 20)."""

from __future__ import annotations

import pytest
from acp import text_block
from support import acp_session

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: rewrite
  tool_calls: [{name: write_file, arguments: {path: notes.txt, content: "second\\n"}}]
- match: edit
  tool_calls: [{name: edit_file, arguments: {path: notes.txt, old: second, new: third}}]
- match: binary
  tool_calls: [{name: write_file, arguments: {path: blob.bin, content: "text now"}}]
- repeat: true
  text: done
"""


def diffs(updates):
    return [[(c.path, c.old_text, c.new_text) for c in u.content or () if c.type == "diff"] for u in updates]


async def test_write_diffs_come_from_the_recorded_blobs_live_and_in_replay(acp_env):
    acp_env.script.write_text(SCRIPT)
    notes = acp_env.work / "notes.txt"
    notes.write_text("first\n")
    (acp_env.work / "blob.bin").write_bytes(b"\x00\x01binary")
    path = str(notes)
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.set_session_mode(session_id=sid, mode_id="auto-edit")   # writes without asking
        for prompt in ("rewrite", "edit"):
            await conn.prompt(session_id=sid, prompt=[text_block(prompt)])
            notes.write_text(notes.read_text() + "typed by the user\n")   # changed between the calls
        await conn.prompt(session_id=sid, prompt=[text_block("binary")])
        want = [[(path, "first\n", "second\n")],
                [(path, "second\ntyped by the user\n", "third\ntyped by the user\n")],
                []]   # binary before: no diff, the text output instead
        live = [u for u in client.of("tool_call_update", sid) if u.status == "completed"]
        assert diffs(live) == want
        assert [c.content.text for c in live[2].content] == ["wrote 8 bytes to blob.bin"]
        client.clear()
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert diffs(client.of("tool_call", sid)) == want


async def test_session_tool_diff_over_the_daemons_protocol(acp_env):
    import jsonschema
    from sessiondag.rpc import schema as rpc_schema
    from sessiondag_client.connecting import spawn_stdio
    from sessiondag_client.errors import NotFoundError

    acp_env.script.write_text(SCRIPT)
    (acp_env.work / "notes.txt").write_text("first\n")
    c = await spawn_stdio(str(acp_env.state), env=acp_env.env)

    async def grant(params):
        return {"granted": True}
    c.on_request("agent/request_permission", grant)
    try:
        h = await c.open(working_dir=str(acp_env.work))
        await c.agent_prompt(session_id=h.id, content="rewrite")
        nodes = await c.get_branch(h.id)
        write = next(n for n in nodes if n.name == "write_file")
        r = await c.tool_diff(h.id, write.id)
        jsonschema.validate(r, rpc_schema.result_schema("session/tool_diff"))
        assert r == {"node_id": write.id, "files": [{"path": "notes.txt", "old_text": "first\n",
                                                     "new_text": "second\n"}]}
        llm = next(n for n in nodes if n.role == "llm")
        assert (await c.tool_diff(h.id, llm.id))["files"] == []   # not a write: nothing recorded
        with pytest.raises(NotFoundError):
            await c.tool_diff(h.id, "no-such-node")
    finally:
        await c.aclose()
