"""The reference MCP filesystem server (@modelcontextprotocol/server-filesystem from npm, the
TypeScript SDK's side of the protocol; installed by mk/mcp.mk from tests/mcp/npm/package-lock.json)
used by the agent through `sessiondag acp` and a real daemon."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import McpServerStdio
from support import RecordingClient, acp_process, daemon_branch
from setup_check import require

pytestmark = pytest.mark.anyio
BIN = Path(__file__).parent / "npm" / "node_modules" / ".bin" / "mcp-server-filesystem"


def server_bin() -> str:
    require(shutil.which("node"), "node (mk/mcp.mk installs nodejs and npm from apt)", "mcp-install")
    require(BIN.exists(), f"the reference MCP filesystem server (mk/mcp.mk runs `npm ci` in {BIN.parents[2]})",
            "mcp-install")
    return str(BIN)


async def test_the_reference_filesystem_server_reads_and_writes_in_a_turn(acp_env):
    work = acp_env.work
    (work / "notes.txt").write_text("milk, eggs\n")
    acp_env.script.write_text(f"""\
- match: what is in the notes
  tool_calls: [{{name: mcp__fs__read_text_file, arguments: {{path: {work}/notes.txt}}}}]
- match: "milk, eggs"
  text: you need milk and eggs
- match: save a list
  repeat: true
  tool_calls: [{{name: mcp__fs__write_file, arguments: {{path: {work}/list.txt, content: bread}}}}]
- match: Successfully wrote
  text: saved
- match: denied
  text: could not save
""")
    fs = McpServerStdio(name="fs", command=server_bin(), args=[str(work)], env=[])
    client = RecordingClient()
    async with acp_process(acp_env, client) as conn:
        sid = (await conn.new_session(cwd=str(work), mcp_servers=[fs])).session_id
        client.permission_answers = ["allow_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("what is in the notes")])
        assert client.agent_text(sid) == "you need milk and eggs"
        client.clear()
        client.permission_answers = ["reject_once"]   # the write is asked for, and refused: nothing written
        await conn.prompt(session_id=sid, prompt=[text_block("save a list")])
        assert not (work / "list.txt").exists()
        assert client.permission_requests[-1].title == "mcp:fs/write_file"
        client.clear()
        client.permission_answers = ["allow_once"]
        await conn.prompt(session_id=sid, prompt=[text_block("save a list")])
        assert client.agent_text(sid) == "saved" and (work / "list.txt").read_text() == "bread"
    nodes = await daemon_branch(acp_env, sid)
    names = [n.name for n in nodes if n.role == "code" and n.name.startswith("mcp:")]
    assert names == ["mcp:fs/read_text_file", "mcp:fs/write_file", "mcp:fs/write_file"]
