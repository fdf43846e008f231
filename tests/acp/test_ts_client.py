"""`sessiondag acp` driven by the official TypeScript ACP client (@agentclientprotocol/sdk from npm,
installed by `make install`/`make test` through mk/acp.mk): a client nobody here wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ACP_CMD, daemon_branch
from setup_check import require

pytestmark = pytest.mark.anyio
TS = Path(__file__).parent / "ts_client"
MCP_SERVER = Path(__file__).parent.parent / "mcp" / "servers.py"   # the SDK's MCPServer

SCRIPT = """\
- match: hello
  text: hello from sessiondag
- match: write it
  repeat: true
  tool_calls: [{name: write_file, arguments: {path: out.txt, content: written by the agent}}]
- match: permission
  repeat: true
  text: refused
- match: wrote
  text: done
- match: read the notes
  tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
- match: buffer from the ts client
  text: I read the buffer
- match: wait for it
  text: waiting
  hang: true
- match: echo please
  tool_calls: [{name: mcp__t__echo, arguments: {text: from ts}}]
- match: "echo: from ts"
  text: the MCP server answered
- match: in the fork
  text: answered in the fork
"""


def node_setup() -> str:
    node = shutil.which("node")
    require(node, "node (mk/acp.mk installs nodejs and npm from apt)", "acp-install")
    require((TS / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json").exists(),
            f"the TypeScript ACP SDK in {TS}/node_modules (mk/acp.mk runs `npm ci` there)", "acp-install")
    return node


async def test_the_typescript_sdk_client_drives_sessiondag_acp(acp_env, tmp_path):
    node = node_setup()
    acp_env.script.write_text(SCRIPT)
    (acp_env.work / "notes.txt").write_text("disk text\n")
    other = tmp_path / "other"
    other.mkdir()
    cfg = {"cmd": [ACP_CMD[0], *acp_env.args()], "cwd": str(acp_env.work), "otherCwd": str(other),
           "stderr": str(tmp_path / "acp-ts.log"), "mcp": [sys.executable, str(MCP_SERVER), "stdio"]}
    p = subprocess.run([node, str(TS / "drive.mjs"), json.dumps(cfg)], env=acp_env.env, capture_output=True,
                       text=True, timeout=240)
    assert p.returncode == 0, f"drive.mjs failed:\n{p.stderr}\n--- acp log:\n{(tmp_path / 'acp-ts.log').read_text()}"
    r = json.loads(p.stdout)
    sid = r["sessionId"]
    ups = [u["update"] for u in r["updates"]]

    caps = r["init"]["agentCapabilities"]
    assert r["init"]["protocolVersion"] == 1 and caps["loadSession"] is True
    assert r["init"]["authMethods"] == []   # no authentication: the empty list, not absent
    assert set(caps["sessionCapabilities"]) >= {"list", "resume", "close", "delete"}

    hello = ups[r["hello"]["from"]:r["hello"]["to"]]
    text = "".join(u["content"]["text"] for u in hello if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "hello from sessiondag" and r["hello"]["res"]["stopReason"] == "end_turn"
    assert sum(u["sessionUpdate"] == "agent_message_chunk" for u in hello) > 1   # streamed

    assert len(r["permissions"]) == 3   # refused, granted, the MCP call
    opts = {o["kind"] for o in r["permissions"][0]["options"]}
    assert opts == {"allow_once", "allow_always", "reject_once"}
    assert r["permissions"][0]["toolCall"]["title"] == "Write out.txt"
    out_path = str(acp_env.work / "out.txt")
    for asked in r["permissions"][:2]:   # the write's diff is in the question; the call's status is left alone
        assert asked["toolCall"]["content"] == [{"type": "diff", "path": out_path, "newText": "written by the agent"}]
        assert "status" not in asked["toolCall"]
    out = acp_env.work / "out.txt"
    assert r["fsWrites"] == [[str(out), "written by the agent"]] and out.read_text() == "written by the agent"
    diffs = [c for u in ups if u["sessionUpdate"] == "tool_call_update" for c in u.get("content") or []
             if c["type"] == "diff"]
    assert diffs == [{"type": "diff", "path": str(out), "newText": "written by the agent"}]   # a new file: no oldText

    read = ups[r["read"]["from"]:r["read"]["to"]]
    assert str(acp_env.work / "notes.txt") in r["fsReads"]
    assert "".join(u["content"]["text"] for u in read if u["sessionUpdate"] == "agent_message_chunk") \
        == "I read the buffer"
    assert r["cancelled"]["stopReason"] == "cancelled"

    assert [s["sessionId"] for s in r["list"]["sessions"]] == [sid]   # the MCP one was deleted

    modes = r["newRes"]["modes"]
    assert modes["currentModeId"] == "ask" and [m["id"] for m in modes["availableModes"]] == ["ask", "auto-edit", "plan"]
    assert r["newRes"]["configOptions"][0]["category"] == "model_config"
    assert r["planAsked"] == 0 and r["planned"]["stopReason"] == "end_turn"   # plan: refused without asking
    assert r["config"]["configOptions"][0]["currentValue"] == "default"
    usage = ups[r["usage"]["from"]:r["usage"]["to"]]
    assert "".join(u["content"]["text"] for u in usage if u["sessionUpdate"] == "agent_message_chunk").endswith(
        "model calls on this branch")
    assert any(u["sessionUpdate"] == "available_commands_update" for u in ups)
    assert any(u["sessionUpdate"] == "current_mode_update" for u in ups)
    mcp_ups = ups[r["mcp"]["from"]:r["mcp"]["to"]]
    assert "".join(u["content"]["text"] for u in mcp_ups if u["sessionUpdate"] == "agent_message_chunk") \
        == "the MCP server answered"
    assert any(u.get("title") == "mcp:t/echo" for u in mcp_ups if u["sessionUpdate"] == "tool_call")
    assert r["deleted"] == {} and not (acp_env.state / "sessions" / r["mcp"]["sessionId"]).exists()
    assert r["branches"]["headId"] and len(r["branches"]["branches"]) == 1

    assert r["errors"]["unknownSession"]["code"] == -32002 and r["errors"]["unknownSession"]["data"]["code"] == -32014
    assert r["errors"]["unknownMethod"]["code"] == -32601
    assert r["errors"]["relativeCwd"]["code"] == -32602
    assert r["errors"]["mismatch"]["data"]["reason"] == "working_dir_mismatch"
    resumed = ups[r["resume"]["from"]:r["resume"]["to"]]   # no replay: at most the commands again
    assert {u["sessionUpdate"] for u in resumed} <= {"available_commands_update"}

    nodes = await daemon_branch(acp_env, sid)   # the replay is the branch the daemon holds
    replay = ups[r["load"]["from"]:r["load"]["to"]]
    ids = [u.get("messageId") or u.get("toolCallId") for u in replay
           if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk", "tool_call")]
    want = [n.id for n in nodes if (n.role == "user" and n.caller == "ROOT") or (n.role == "llm" and n.output)
            or (n.role == "code" and "tool_call_id" in n.metadata)]
    assert ids == want
    live = [u for u in ups[:r["load"]["from"]] if u["sessionUpdate"] == "tool_call_update" and "rawOutput" in u]
    calls = [u for u in replay if u["sessionUpdate"] == "tool_call"]
    assert live and calls and all(isinstance(u["rawOutput"], dict) for u in live + calls)
    assert {u["rawOutput"]["output"] for u in calls} >= {"wrote 20 bytes to out.txt"}
    fid = r["fork"]["sessionId"]
    assert "fork" in caps["sessionCapabilities"] and fid.startswith(sid + "~")
    forked = ups[r["fork"]["from"]:r["fork"]["to"]]
    assert "".join(u["content"]["text"] for u in forked if u["sessionUpdate"] == "agent_message_chunk") \
        == "answered in the fork" and r["fork"]["res"]["stopReason"] == "end_turn"
    assert {u["sessionId"] for u in r["updates"][r["fork"]["from"]:r["fork"]["to"]]} == {fid}
    assert [n.id for n in await daemon_branch(acp_env, sid)] == [n.id for n in nodes]   # HEAD stayed
    assert r["exitCode"] == 0
