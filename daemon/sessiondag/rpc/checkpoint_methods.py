"""session/restore, session/diff and session/tool_diff: workspace checkpoints over the wire
(runtime/checkpoints.py and runtime/tool_diffs.py do the work)."""

from __future__ import annotations

from ..core.errors import TurnRunningError
from ..runtime import checkpoints, tool_diffs
from . import handler_types as ht
from .registry import RequestContext, method


async def _restore(ctx: RequestContext, sid: str, node_id: str | None, what: str, paths: list[str] | None = None,
                   dry_run: bool = False, force: bool = False, undo: bool = False,
                   before: bool = False) -> dict[str, object]:
    d = ctx.service
    if what != "conversation":
        d.check_bound(sid)
    if sid in d.agents.active:   # a turn of this daemon (another process's: the turn lock says)
        raise TurnRunningError(sid)
    async with d.lock(sid):
        s = await d.get(sid)
        return await d.run(s, checkpoints.restore, s, node_id, what, paths, dry_run, force, undo, before)


@method("session/restore")
async def session_restore(ctx: RequestContext, params: ht.SessionRestoreParams) -> dict[str, object]:
    p = params
    return await _restore(ctx, p["session_id"], p["node_id"], p["what"] or "files", p["paths"],
                          bool(p["dry_run"]), bool(p["force"]), bool(p["undo"]), bool(p["before"]))


async def checkout_with_files(ctx: RequestContext, sid: str, head_id: str) -> dict[str, object]:
    """session/checkout with restore_files: a restore of both (refused when the tree is dirty)."""
    out = await _restore(ctx, sid, head_id, "both")
    return {"head_id": out["head_id"], "files": out.get("files")}


@method("session/diff")
async def session_diff(ctx: RequestContext, params: ht.SessionDiffParams) -> dict[str, object]:
    p = params
    d = ctx.service
    s = await d.get(p["session_id"])
    if p["to"] == "current":
        d.check_bound(p["session_id"])
    return await d.run(s, checkpoints.diff, s, p["from"], p["to"] or s.head_id, p["paths"], bool(p["texts"]))


@method("session/tool_diff")
async def session_tool_diff(ctx: RequestContext, params: ht.SessionToolDiffParams) -> dict[str, object]:
    p = params
    d = ctx.service
    s = await d.get(p["session_id"])
    return await d.run(s, tool_diffs.tool_diff, s, p["node_id"])
