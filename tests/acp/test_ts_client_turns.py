"""What a turn streams besides text, driven by the official TypeScript ACP client
(@agentclientprotocol/sdk, ts_client/drive_turns.mjs) over real pipes: `agent_thought_chunk`s from a
real OpenAI-compatible model server on loopback streaming reasoning deltas, `plan` updates from the
update_plan tool, and run_command in the TS client's own terminal (`terminal/*`, real processes):
output and exit status, a write outside the working dir refused by the sandbox, a timeout that kills
it, and a cancel while the terminal runs the command — the command is killed and released, the
turn ends cancelled and is committed like any turn, and the next prompt works."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import ACP_CMD, _alive, daemon_branch
from test_ts_client import TS, node_setup
from waiting import wait_until

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
from loopback_openai import LoopbackOpenAI  # noqa: E402

pytestmark = pytest.mark.anyio
THOUGHT = "The user says hello; a short greeting back will do."


def replies(outside):
    def run(command, **kw):
        return {"tool_calls": [{"name": "run_command", "arguments": {"command": command, **kw}}]}
    plan = [{"content": "read the code", "status": "in_progress", "priority": "high"},
            {"content": "fix the bug", "status": "pending"}]
    return [
        {"match": "hello", "reasoning": THOUGHT, "text": "Hello!"},
        {"match": "make a plan", "tool_calls": [{"name": "update_plan", "arguments": {"entries": plan}}]},
        {"match": "plan updated", "text": "planned"},
        {"match": "run it", **run("echo hello from the terminal; echo err >&2; exit 3")},
        {"match": "exit code 3", "text": "it failed with 3"},
        {"match": "escape", **run(f"touch {outside}")},
        {"match": "touch:", "text": "refused"},
        {"match": "sleep", **run("sleep 30", timeout=1)},
        {"match": "timed out", "text": "too slow"},
        {"match": "hang", **run("echo started; sleep 120", timeout=300)},
        {"match": "after the cancel", "text": "still here"},
    ]


def text_of(r, span, kind="agent_message_chunk"):
    return "".join(u["update"]["content"]["text"] for u in r["updates"][span["from"]:span["to"]]
                   if u["update"]["sessionUpdate"] == kind)


def kinds(r, span):
    return [u["update"]["sessionUpdate"] for u in r["updates"][span["from"]:span["to"]]]


async def test_the_typescript_sdk_client_gets_thoughts_plans_and_runs_terminals(acp_env, tmp_path):
    node = node_setup()
    outside = tmp_path / "outside.txt"
    with LoopbackOpenAI(replies(outside)) as srv:
        acp_env.env.update(SESSIONDAG_PROVIDER="openai", SESSIONDAG_OPENAI_BASE_URL=srv.base_url,
                           SESSIONDAG_OPENAI_API_KEY="k", SESSIONDAG_MODEL="loopback-model")
        cfg = {"cmd": [ACP_CMD[0], *acp_env.args()], "cwd": str(acp_env.work),
               "stderr": str(tmp_path / "acp-ts.log")}
        p = subprocess.run([node, str(TS / "drive_turns.mjs"), json.dumps(cfg)], env=acp_env.env,
                           capture_output=True, text=True, timeout=240)
        assert p.returncode == 0, f"drive_turns.mjs failed:\n{p.stderr}\n--- acp log:\n" \
                                  f"{(tmp_path / 'acp-ts.log').read_text()}"
        r = json.loads(p.stdout)
        sent = [m for q in srv.requests for m in q["body"]["messages"]]
    sid = r["sessionId"]
    nodes = await daemon_branch(acp_env, sid)

    # thoughts: streamed before the answer, kept in the llm node, never sent back to the model
    think = r["think"]
    assert text_of(r, think, "agent_thought_chunk") == THOUGHT and text_of(r, think) == "Hello!"
    k = kinds(r, think)
    assert k.count("agent_thought_chunk") > 1 and k.index("agent_thought_chunk") < k.index("agent_message_chunk")
    llm = next(n for n in nodes if n.role == "llm")
    assert llm.metadata["reasoning"] == THOUGHT and THOUGHT not in json.dumps(sent)

    # the plan: a plan update with the whole plan, not a tool call
    plan = r["plan"]
    (entries,) = [u["update"]["entries"] for u in r["updates"][plan["from"]:plan["to"]]
                  if u["update"]["sessionUpdate"] == "plan"]
    assert [(e["content"], e["status"], e["priority"]) for e in entries] == \
        [("read the code", "in_progress", "high"), ("fix the bug", "pending", "medium")]
    assert "tool_call" not in kinds(r, plan) and text_of(r, plan) == "planned"

    # run_command in the TS client's terminal: the sandboxed argv, shown as terminal content
    run, escape, slow, hang = r["terminals"]
    assert run["cwd"] == str(acp_env.work) and run["args"][-1].endswith("exit 3")
    assert run["exit"] == {"exitCode": 3, "signal": None} and run["released"] and not run["killed"]
    assert text_of(r, r["run"]) == "it failed with 3"
    ups = [u["update"] for u in r["updates"][r["run"]["from"]:r["run"]["to"]]]
    shown = [c["terminalId"] for u in ups if u["sessionUpdate"] == "tool_call_update" for c in u.get("content") or ()
             if c["type"] == "terminal"]
    assert shown == [run["terminalId"]]
    final = [u for u in ups if u["sessionUpdate"] == "tool_call_update"][-1]
    assert final["status"] == "completed" and final["rawOutput"]["output"] == \
        "exit code 3\nhello from the terminal\nerr\n"
    assert len(r["permissions"]) == 1   # allow_always: the later commands are not asked again
    assert escape["exit"]["exitCode"] != 0 and not outside.exists() and text_of(r, r["escape"]) == "refused"
    assert slow["killed"] and slow["exit"]["signal"] == "SIGKILL" and text_of(r, r["slow"]) == "too slow"

    # a cancel while the terminal runs: killed and released, the turn cancelled and committed
    assert r["hang"]["terminalId"] == hang["terminalId"] and hang["released"]
    assert hang["exit"] is not None and hang["exit"]["signal"] == "SIGKILL"
    wait_until(lambda: not _alive(hang["pid"]), "the cancelled command to be gone", timeout=30)
    assert r["hang"]["res"]["stopReason"] == "cancelled"
    runs = [n for n in nodes if n.name == "run_command"]
    assert [n.status for n in runs[:3]] == ["completed"] * 3 and runs[3].status == "cancelled"
    assert runs[1].metadata["sandbox"]["mode"] == "workspace-write"
    users = [n for n in nodes if n.role == "user" and n.caller == "ROOT"]
    assert [n.output for n in users][-2:] == ["hang", "after the cancel"]
    assert text_of(r, r["after"]) == "still here" and r["after"]["res"]["stopReason"] == "end_turn"
    git = acp_env.state / "sessions" / sid / "git"
    committed = subprocess.run(["git", "--git-dir", str(git), "log", "--format=%s"], capture_output=True, text=True,
                               check=True).stdout.splitlines()
    turns = [c.split(": ", 1)[1] for c in committed if c.startswith("turn ")]
    assert turns[:2] == ["completed — 'after the cancel'", "cancelled — 'hang'"]   # newest first

    # a load's replay carries the thought and the plan too
    replay = kinds(r, r["load"])
    assert replay.count("agent_thought_chunk") >= 1 and replay.count("plan") == 1
    assert r["exitCode"] == 0
