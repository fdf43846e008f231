"""A model's streamed reasoning becomes ACP `agent_thought_chunk`s, live and in a load's replay
(kept in the llm node's metadata.reasoning, never rendered into later prompts): from a real
OpenAI-compatible server on loopback streaming `reasoning_content` deltas, and from the scripted
provider's `reasoning`."""

from __future__ import annotations

import os
import sys

import pytest
from acp import text_block
from support import acp_session, daemon_branch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
from loopback_openai import LoopbackOpenAI  # noqa: E402

pytestmark = pytest.mark.anyio
THOUGHT = "The user says hello; a short greeting back will do."


def thoughts(client, sid):
    return "".join(u.content.text for u in client.of("agent_thought_chunk", sid))


async def test_streamed_reasoning_is_thought_chunks_live_and_in_replay(acp_env):
    with LoopbackOpenAI([{"reasoning": THOUGHT, "text": "Hello!", "repeat": True}]) as srv:
        acp_env.env.update(SESSIONDAG_PROVIDER="openai", SESSIONDAG_OPENAI_BASE_URL=srv.base_url,
                           SESSIONDAG_OPENAI_API_KEY="k", SESSIONDAG_MODEL="loopback-model")
        async with acp_session(acp_env) as (conn, client, sid):
            await conn.prompt(session_id=sid, prompt=[text_block("hello")])
            chunks = client.of("agent_thought_chunk", sid)
            assert thoughts(client, sid) == THOUGHT and len(chunks) > 1   # streamed, not at the end
            kinds = [u.session_update for _, u in client.updates if u.session_update.startswith("agent_")]
            assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
            (llm,) = [n for n in await daemon_branch(acp_env, sid) if n.role == "llm"]
            assert llm.metadata["reasoning"] == THOUGHT and llm.output == "Hello!"
            assert {c.message_id for c in chunks} == {llm.id}
            await conn.prompt(session_id=sid, prompt=[text_block("again")])
            sent = srv.requests[-1]["body"]["messages"]
            assert THOUGHT not in str(sent)   # not rendered into the next prompt
            client.clear()
            await conn.load_session(cwd=str(acp_env.work), session_id=sid, mcp_servers=[])
            replayed = [u.session_update for _, u in client.updates if u.session_update.startswith(("agent_", "user_"))]
            assert replayed == ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk"] * 2
            assert thoughts(client, sid) == THOUGHT * 2


async def test_the_scripted_providers_reasoning(acp_env):
    async with acp_session(acp_env, "- reasoning: thinking it over\n  text: done\n") as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("go")])
        assert thoughts(client, sid) == "thinking it over" and client.agent_text(sid) == "done"
