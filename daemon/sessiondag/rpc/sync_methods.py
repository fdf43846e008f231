"""session/push, session/pull, remote/list: sessions through git remotes (docs/sync.md).

The work is sync/'s, in a worker thread (network and git). A push reads immutable objects and
takes no daemon lock; a pull writes the session, so it holds the session's async lock (serialized
with the daemon's other writes to it) and announces `session/did_change {kind: reload}` after.
"""

from __future__ import annotations

from ..sync import listing, pull, push, remotes
from . import handler_types as ht
from .registry import RequestContext, method


def _remote(ctx: RequestContext, name: str | None) -> remotes.Remote:
    store = ctx.service.store
    return remotes.bounded(remotes.resolve(store.state_dir, name), store.settings())  # the transfer bounds


@method("session/push")
async def session_push(ctx: RequestContext, params: ht.SessionPushParams) -> ht.SessionPushResult:
    p = params
    r = _remote(ctx, p["remote"])
    await ctx.service.get(p["session_id"])  # typed errors of a missing / deleted session first
    if not p["dry_run"]:   # what was acknowledged goes: a finished turn's records are committed first
        await ctx.service.write(p["session_id"], push.commit_finished_turn)
    return await ctx.service.blocking(push.push, ctx.service.store, r, p["session_id"], ctx.service.store.settings(),
                                         allow_secrets=bool(p["allow_secrets"]), dry_run=bool(p["dry_run"]))


@method("session/pull")
async def session_pull(ctx: RequestContext, params: ht.SessionPullParams) -> ht.SessionPullResult:
    p = params
    sid = p["session_id"]
    r = _remote(ctx, p["remote"])
    d = ctx.service
    async with d.lock(sid):
        res = await d.blocking(pull.pull, ctx.service.store, r, sid, working_dir=p["working_dir"])
    if res["status"] != "up_to_date":
        s = d.loaded(sid)
        head = s.loaded_graph.head_id if s is not None and s.loaded_graph is not None else res.get("head_id")
        d.broadcast(sid, "session/did_change", {"session_id": sid, "head_id": head, "changes": [{"kind": "reload"}]})
    return res


@method("remote/list")
async def remote_list(ctx: RequestContext, params: ht.RemoteListParams) -> ht.RemoteListResult:
    configured = await ctx.service.blocking(remotes.listed, ctx.service.store.state_dir)
    if not params["remote"] and not any(r["default"] for r in configured):
        return {"remotes": configured}
    r = _remote(ctx, params["remote"])
    return {"remotes": configured, "sessions": await ctx.service.blocking(listing.list_remote, r)}
