"""`sessiondag acp` driven by the official TypeScript ACP client (@agentclientprotocol/sdk from npm,
installed by `make install`/`make test` through mk/acp.mk): a client nobody here wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support import ACP_CMD
from test_acp_python import daemon_branch

pytestmark = pytest.mark.anyio
TS = Path(__file__).parent / "ts_client"

SCRIPT = """\
- match: hello
  text: hello from sessiondag
- match: write it
  repeat: true
  tool_calls: [{name: write_file, arguments: {path: out.txt, content: written by the agent}}]
- match: permission
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
"""


def node_setup() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: apt-get install nodejs npm (the TypeScript ACP client test needs it)")
    if not (TS / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json").exists():
        pytest.fail(f"the TypeScript ACP SDK is not installed in {TS}/node_modules: run `make acp-install` "
                    f"(or `cd {TS} && npm ci`); `make test` does it")
    return node


async def test_the_typescript_sdk_client_drives_sessiondag_acp(acp_env, tmp_path):
    node = node_setup()
    acp_env.script.write_text(SCRIPT)
    (acp_env.work / "notes.txt").write_text("disk text\n")
    other = tmp_path / "other"
    other.mkdir()
    cfg = {"cmd": [ACP_CMD[0], *acp_env.args()], "cwd": str(acp_env.work), "otherCwd": str(other),
           "stderr": str(tmp_path / "acp-ts.log")}
    p = subprocess.run([node, str(TS / "drive.mjs"), json.dumps(cfg)], env=acp_env.env, capture_output=True,
                       text=True, timeout=240)
    assert p.returncode == 0, f"drive.mjs failed:\n{p.stderr}\n--- acp log:\n{(tmp_path / 'acp-ts.log').read_text()}"
    r = json.loads(p.stdout)
    sid = r["sessionId"]
    ups = [u["update"] for u in r["updates"]]

    caps = r["init"]["agentCapabilities"]
    assert r["init"]["protocolVersion"] == 1 and caps["loadSession"] is True
    assert set(caps["sessionCapabilities"]) >= {"list", "resume", "close"}

    hello = ups[r["hello"]["from"]:r["hello"]["to"]]
    text = "".join(u["content"]["text"] for u in hello if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "hello from sessiondag" and r["hello"]["res"]["stopReason"] == "end_turn"
    assert sum(u["sessionUpdate"] == "agent_message_chunk" for u in hello) > 1   # streamed

    assert len(r["permissions"]) == 2
    opts = {o["kind"] for o in r["permissions"][0]["options"]}
    assert opts == {"allow_once", "allow_always", "reject_once"}
    assert r["permissions"][0]["toolCall"]["title"] == "Write out.txt"
    out_path = str(acp_env.work / "out.txt")
    for asked in r["permissions"]:   # the write's diff is in the question; the call's status is left alone
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

    assert [s["sessionId"] for s in r["list"]["sessions"]] == [sid]
    assert r["branches"]["headId"] and len(r["branches"]["branches"]) == 1

    assert r["errors"]["unknownSession"]["code"] == -32002 and r["errors"]["unknownSession"]["data"]["code"] == -32014
    assert r["errors"]["unknownMethod"]["code"] == -32601
    assert r["errors"]["relativeCwd"]["code"] == -32602
    assert r["errors"]["mismatch"]["data"]["reason"] == "working_dir_mismatch"
    assert r["resumeUpdates"] == 0

    nodes = await daemon_branch(acp_env, sid)   # the replay is the branch the daemon holds
    replay = ups[r["load"]["from"]:r["load"]["to"]]
    ids = [u.get("messageId") or u.get("toolCallId") for u in replay]
    want = [n.id for n in nodes if (n.role == "user" and n.caller == "ROOT") or (n.role == "llm" and n.output)
            or (n.role == "code" and "tool_call_id" in n.metadata)]
    assert ids == want
    live = [u for u in ups[:r["load"]["from"]] if u["sessionUpdate"] == "tool_call_update" and "rawOutput" in u]
    calls = [u for u in replay if u["sessionUpdate"] == "tool_call"]
    assert live and calls and all(isinstance(u["rawOutput"], dict) for u in live + calls)
    assert {u["rawOutput"]["output"] for u in calls} >= {"wrote 20 bytes to out.txt"}
    assert r["exitCode"] == 0
