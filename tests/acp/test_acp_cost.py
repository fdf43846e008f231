"""ACP `usage_update` carries the session's cumulative cost (from the usage ledger), seeded when a
session is loaded again by a new `sessiondag acp` process; no figure when a call has no price."""

from __future__ import annotations

import pytest
from acp import text_block
from support import RecordingClient, acp_process, acp_session

pytestmark = pytest.mark.anyio

SCRIPT = ("- match: one\n  text: first\n  usage: {input_tokens: 1000, output_tokens: 100}\n"
          "- match: two\n  text: second\n  usage: {input_tokens: 2000, output_tokens: 10}\n")


async def test_usage_update_cost_is_cumulative_across_processes(acp_env, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[prices."scripted/scripted"]\ninput_per_mtok = 2.0\noutput_per_mtok = 10.0\n')
    acp_env.env["SESSIONDAG_CONFIG"] = str(cfg)
    acp_env.script.write_text(SCRIPT)
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("one")])
        first = client.of("usage_update", sid)[-1].cost
    assert first.currency == "USD" and first.amount == pytest.approx((1000 * 2 + 100 * 10) / 1e6)
    client2 = RecordingClient()
    async with acp_process(acp_env, client2) as conn:
        await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
        await conn.prompt(session_id=sid, prompt=[text_block("two")])
        second = client2.of("usage_update", sid)[-1].cost
    assert second.amount == pytest.approx((1000 * 2 + 100 * 10 + 2000 * 2 + 10 * 10) / 1e6)


async def test_no_cost_when_the_model_has_no_price(acp_env):
    acp_env.script.write_text("- text: hi\n")
    async with acp_session(acp_env) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("hello")])
    u = client.of("usage_update", sid)[-1]
    assert u.used > 0 and u.cost is None
