"""session/replay and session/compare: counterfactual replay of a recorded model call, and two
branches side by side (runtime/replay.py, context/compare.py; docs/replay.md).

`session/replay_branch {session_id, from_node, to_node?, mode, provider?, model?, temperature?,
max_tokens?, system?, name?}` re-runs a branch segment teacher-forced (runtime/replay_branch.py).
`session/replay {session_id, node_id, provider?, model?, temperature?, max_tokens?, system?,
edits?, name?}` builds the provider like agent/prompt does (these settings over the session's over
the daemon's; with neither provider nor model given, the original call's model), re-sends the
recorded request with the overrides in a turn worker under the session's lock, and answers
{node, branch, text, tool_calls}. `session/compare {session_id, a, b}` is a read.
"""

from __future__ import annotations

from typing import Mapping, cast

import anyio.lowlevel

from ..context.compare import compare
from ..core.model import MODEL_KEY
from ..runtime import Runtime
from ..runtime.context import SessionWriter
from ..runtime.providers import Provider
from ..runtime.replay import Edit, Overrides, replay_call
from ..runtime.replay_branch import replay_branch
from ..store.session import Session
from . import agent_settings, handler_types as ht
from .agent_methods import _bridge
from .registry import RequestContext, method


def _refuse(kind: str, detail: Mapping[str, object]) -> bool:
    return False  # a replay runs no tools


async def _setup(ctx: RequestContext, params: ht.SessionReplayParams | ht.SessionReplayBranchParams,
                 node_id: str) -> tuple[Session, Provider, Overrides]:
    """(session, provider, overrides): the settings over the session's over the daemon's; with neither
    provider nor model given, the recorded call's model."""
    settings = agent_settings.pick(params)
    d = ctx.service
    session = await d.get(params["session_id"])
    node = await d.run(session, session.get_node, node_id)
    if "model" not in settings and "provider" not in settings and isinstance(node.metadata.get(MODEL_KEY), str):
        settings["model"] = node.metadata[MODEL_KEY]
    provider, _ = await agent_settings.for_prompt(ctx, session, settings, None)  # resolved here: no client config
    # the schema's edits are runtime/replay.py's Edits ({message_index, content}: content any JSON there)
    edits = cast("list[Edit]", params.get("edits") or [])
    ov = Overrides(system=params["system"], edits=edits, provider=settings.get("provider"),
                   model=settings.get("model"), temperature=settings.get("temperature"),
                   max_tokens=settings.get("max_tokens"))
    return session, provider, ov


@method("session/replay")
async def session_replay(ctx: RequestContext, params: ht.SessionReplayParams) -> dict[str, object]:
    p = params
    sid = p["session_id"]
    d = ctx.service
    session, provider, ov = await _setup(ctx, p, p["node_id"])
    rt = Runtime(provider, permissions=_refuse, config=d.settings)

    def work() -> dict[str, object]:
        r = replay_call(SessionWriter(ctx.service.store, session), rt, p["node_id"], ov, p["name"])
        return {"node": r["node"].to_dict(), "branch": r["branch"], "text": r["text"], "tool_calls": r["tool_calls"]}
    async with d.lock(sid):
        session = await d.get(sid)
        return await d.agents.run_turn_thread(work)


@method("session/replay_branch")
async def session_replay_branch(ctx: RequestContext, params: ht.SessionReplayBranchParams) -> dict[str, object]:
    """Teacher-forced: recorded_tools reuses recorded results; live_tools runs the tools, asking the
    client for permission like agent/prompt does (agent/request_permission)."""
    p = params
    sid = p["session_id"]
    d = ctx.service
    session, provider, ov = await _setup(ctx, p, p["from_node"])
    on_event, ask_user, permissions = _bridge(ctx, sid, anyio.lowlevel.current_token())
    live = p["mode"] == "live_tools"
    rt = Runtime(provider, permissions=permissions if live else _refuse, ask_user=ask_user, on_event=on_event,
                 config=d.settings)
    if live:
        d.check_bound(sid)

    def work() -> dict[str, object]:
        return replay_branch(SessionWriter(ctx.service.store, session), rt, p["from_node"], p["to_node"], ov, p["mode"],
                             p["name"])
    async with d.lock(sid):
        session = await d.get(sid)
        return {"session_id": sid, **await d.agents.run_turn_thread(work)}


@method("session/compare")
async def session_compare(ctx: RequestContext, params: ht.SessionCompareParams) -> dict[str, object]:
    p = params
    s = await ctx.service.get(p["session_id"])
    return {"session_id": p["session_id"], **await ctx.service.run(s, compare, s, p["a"], p["b"])}
