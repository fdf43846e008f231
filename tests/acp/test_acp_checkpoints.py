"""`_sessiondag/restore` and `_sessiondag/diff` through a real `sessiondag acp` process and its daemon."""

from __future__ import annotations

import pytest
from acp import RequestError, text_block
from support import RecordingClient, acp_process, new_session

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
