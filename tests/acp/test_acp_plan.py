"""The agent's plan: ACP turns offer the `update_plan` tool (agent/prompt {plan_tool}), and each
completed call is a `plan` session update with the whole plan — not a tool call — live and in a
load's replay; an invalid plan is a failed call the model sees, and sends no update."""

from __future__ import annotations

import pytest
from acp import text_block
from support import acp_session, daemon_branch

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: make a plan
  tool_calls: [{name: update_plan, arguments: {entries: [
      {content: read the code, status: in_progress, priority: high},
      {content: fix the bug, status: pending}]}}]
- match: plan updated
  tool_calls: [{name: update_plan, arguments: {entries: [
      {content: read the code, status: completed, priority: high},
      {content: fix the bug, status: in_progress}]}}]
- match: "1 completed"
  text: on it
- match: bad plan
  tool_calls: [{name: update_plan, arguments: {entries: [{content: x, status: someday}]}}]
- match: status must be
  text: fixed my plan
"""


def plans(client, sid):
    return [[(e.content, e.status, e.priority) for e in u.entries] for u in client.of("plan", sid)]


async def test_the_agents_plan_is_plan_updates_live_and_in_replay(acp_env):
    want = [[("read the code", "in_progress", "high"), ("fix the bug", "pending", "medium")],
            [("read the code", "completed", "high"), ("fix the bug", "in_progress", "medium")]]
    async with acp_session(acp_env, SCRIPT) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("make a plan")])
        assert client.agent_text(sid) == "on it" and plans(client, sid) == want
        assert [u for u in client.of("tool_call", sid) if u.title == "update_plan"] == []   # not a tool call
        await conn.prompt(session_id=sid, prompt=[text_block("bad plan")])
        assert client.agent_text(sid).endswith("fixed my plan") and len(plans(client, sid)) == 2
        nodes = await daemon_branch(acp_env, sid)
        calls = [n for n in nodes if n.name == "update_plan"]
        assert [n.status for n in calls] == ["completed", "completed", "error"]
        assert {u.field_meta["sessiondag"]["nodeId"] for u in client.of("plan", sid)} == {n.id for n in calls[:2]}
        client.clear()
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        assert plans(client, sid) == want and client.of("tool_call", sid) == []
