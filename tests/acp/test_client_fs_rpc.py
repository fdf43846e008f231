"""The daemon side of client file system delegation, over the daemon's own protocol: agent/prompt
with `client_fs` makes the workspace tools send agent/read_text_file / agent/write_text_file to the
client that started the turn (shapes checked against rpc_schema/), confined to the working dir."""

from __future__ import annotations

import jsonschema
import pytest
from sessiondag.rpc import schema as rpc_schema
from sessiondag_client.connecting import spawn_stdio
from sessiondag_client.errors import InvalidParamsError

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: read it
  repeat: true
  tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
- match: write it
  tool_calls: [{name: write_file, arguments: {path: sub/out.txt, content: new text}}]
- match: edit it
  tool_calls: [{name: edit_file, arguments: {path: notes.txt, old: buffer, new: edited}}]
- match: escape
  tool_calls: [{name: write_file, arguments: {path: ../evil.txt, content: x}}]
- repeat: true
  text: ok
"""


async def test_client_fs_requests_go_to_the_client_that_prompted(acp_env, tmp_path):
    acp_env.script.write_text(SCRIPT)
    notes = acp_env.work / "notes.txt"
    notes.write_text("disk\n")
    c = await spawn_stdio(str(acp_env.state), env=acp_env.env)
    seen: list[tuple[str, dict]] = []
    buffers = {str(notes): "buffer text\n"}

    async def on_read(params):
        jsonschema.validate(params, rpc_schema.params_schema("agent/read_text_file"))
        seen.append(("read", params))
        if params["path"] not in buffers:
            raise FileNotFoundError(params["path"])
        return {"content": buffers[params["path"]]}

    async def on_write(params):
        jsonschema.validate(params, rpc_schema.params_schema("agent/write_text_file"))
        seen.append(("write", params))
        buffers[params["path"]] = params["content"]
        return {}

    async def grant(params):
        return {"granted": True}
    c.on_request("agent/read_text_file", on_read)
    c.on_request("agent/write_text_file", on_write)
    c.on_request("agent/request_permission", grant)
    try:
        h = await c.open(working_dir=str(acp_env.work))
        with pytest.raises(InvalidParamsError):
            await c.agent_prompt(session_id=h.id, content="read it", client_fs=["read", "delete"])
        r = await c.agent_prompt(session_id=h.id, content="read it", client_fs=["read", "write"])
        jsonschema.validate(r, rpc_schema.result_schema("agent/prompt"))
        assert seen == [("read", {"session_id": h.id, "path": str(notes)})]
        await c.agent_prompt(session_id=h.id, content="write it", client_fs=["read", "write"])
        out = str(acp_env.work / "sub" / "out.txt")
        assert seen[-1] == ("write", {"session_id": h.id, "path": out, "content": "new text"})
        assert not (acp_env.work / "sub").exists()   # the client owns the write
        await c.agent_prompt(session_id=h.id, content="edit it", client_fs=["read", "write"])
        assert buffers[str(notes)] == "edited text\n" and notes.read_text() == "disk\n"
        n = len(seen)
        await c.agent_prompt(session_id=h.id, content="escape", client_fs=["read", "write"])
        assert len(seen) == n and not (tmp_path / "evil.txt").exists()
    finally:
        await c.aclose()
    s = await spawn_stdio(str(acp_env.state), env=acp_env.env)
    asked: list[str] = []

    async def failing_read(params):
        asked.append(params["path"])
        raise RuntimeError("the editor is gone")
    s.on_request("agent/read_text_file", failing_read)
    s.on_request("agent/write_text_file", on_write)
    s.on_request("agent/request_permission", grant)
    try:
        h = await s.open(working_dir=str(acp_env.work))
        await s.agent_prompt(session_id=h.id, content="read it", client_fs=["read"])
        nodes = await s.get_branch(h.id)
        tool = next(x for x in nodes if x.name == "read_file")
        assert tool.status == "error" and "the editor is gone" in tool.output and asked == [str(notes)]
        n = len(seen)   # only reads delegated: writes go to the disk
        await s.agent_prompt(session_id=h.id, content="write it", client_fs=["read"])
        assert len(seen) == n and (acp_env.work / "sub" / "out.txt").read_text() == "new text"
        await s.agent_prompt(session_id=h.id, content="read it")   # no client_fs: the disk, no request
        nodes = await s.get_branch(h.id)
        assert [x.output for x in nodes if x.name == "read_file"][-1] == "disk\n" and asked == [str(notes)]
    finally:
        await s.aclose()
