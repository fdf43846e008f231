"""session/* and daemon/* methods: each maps one-to-one to a store or rendering operation.

Params arrive checked against rpc_schema/ (rpc/params.py: unknown keys, types, enums, bounds →
-32602); an absent param reads as None. Store work runs in a worker thread under the session's
mutex; writes also hold the session's async lock (serialized per session).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import TypedDict, TypeVar, cast

import anyio
import orjson

from ..context import views
from ..context.attachments import load_attachment
from ..context.compaction import compact
from ..context.renderer import renderer_for
from ..core.branch_labels import label_all
from ..core.errors import NotFoundError
from ..core.model import ROOT, Call
from ..store.session import Session
from ..store.session_handle import HandleDict
from . import agent_settings, handler_types as ht
from .checkpoint_methods import checkout_with_files
from .codec import RawArray
from .registry import LATER, RequestContext, answers_now, method

T = TypeVar("T")


async def _read(ctx: RequestContext, sid: str, fn: Callable[[Session], T]) -> T:
    return await ctx.service.read(sid, fn)


async def _write(ctx: RequestContext, sid: str, fn: Callable[[Session], T]) -> T:
    """Serialized per session (async lock + mutex), combined with the writes queued behind it."""
    return await ctx.service.write(sid, fn)


# --- lifecycle ---------------------------------------------------------------------------------
@method("session/open")
async def session_open(ctx: RequestContext, params: ht.SessionOpenParams) -> ht.SessionOpenResult:
    settings = agent_settings.pick(params)
    p = params
    if settings:
        await agent_settings.check(ctx, settings)
    res = await ctx.service.open(p["session_id"], p["working_dir"],
                                 allow_working_dir_mismatch=bool(p["allow_working_dir_mismatch"] or p["rebind"]),
                                 rebind=bool(p["rebind"]))
    if settings:
        await agent_settings.record(ctx, res["session_id"], settings)
    await _given_mcp(ctx, res, p["mcp_servers"])
    return res


async def _given_mcp(ctx: RequestContext, res: HandleDict, raw: object) -> None:
    """A client's `mcp_servers` for the session (rpc/agent_mcp.py): recorded in memory and started
    now, so a server that does not come up is this request's `mcp_server_failed`."""
    if raw is None:
        return
    mcp = ctx.service.agents.mcp
    mcp.give(res["session_id"], raw)
    await mcp.servers_for(res["session_id"], res.get("working_dir"))


@method("session/start")
async def session_start(ctx: RequestContext, params: ht.SessionStartParams) -> ht.SessionStartResult:
    p = params
    return await ctx.service.start(p["session_id"], p["working_dir"])


@method("session/resume")
async def session_resume(ctx: RequestContext, params: ht.SessionResumeParams) -> ht.SessionResumeResult:
    p = params
    res = await ctx.service.resume(p["session_id"], p["working_dir"],
                                   allow_working_dir_mismatch=bool(p["allow_working_dir_mismatch"]))
    await _given_mcp(ctx, res, p["mcp_servers"])
    return res


@method("session/reset")
async def session_reset(ctx: RequestContext, params: ht.SessionResetParams) -> ht.SessionResetResult:
    p = params
    sid = p["session_id"]
    return {"session_id": sid, "reset": await ctx.service.reset(sid)}


@method("session/list")
async def session_list(ctx: RequestContext, params: ht.SessionListParams) -> dict[str, object]:
    p = params
    return {"sessions": await ctx.service.list_sessions(p["working_dir"])}


@method("session/commit")
async def session_commit(ctx: RequestContext, params: ht.SessionCommitParams) -> dict[str, object]:
    p = params
    return await _write(ctx, p["session_id"], lambda s: {"commit": s.commit_turn(p["message"]), "turn": s.turn})


# --- nodes -------------------------------------------------------------------------------------
def _append_work(ctx: RequestContext, p: ht.SessionAppendParams, s: Session,
                 call: Call) -> tuple[Callable[[], dict[str, object]], Callable[[], bool]]:
    """The write of session/append (and whether it is quick: no blob to spill), once its node is
    checked and its session loaded."""
    if call.role == "user" and call.caller == ROOT and call.predecessor is not None:
        ctx.service.check_bound(p["session_id"])  # a ROOT-level user node starts a turn

    def work() -> dict[str, object]:
        stored = s.append(call, expected_head=p["expected_head"])
        return {"node": stored.to_dict(), "head_id": s.graph.head_id}
    return work, lambda: not s.policy.spills(call)


def _call_of(p: ht.SessionAppendParams) -> Call:
    node = dict(p["node"])
    node.pop("seq", None)
    return Call.from_dict(node)


@method("session/append")
async def session_append(ctx: RequestContext, params: ht.SessionAppendParams) -> dict[str, object]:
    call = _call_of(params)
    s = await ctx.service.get(params["session_id"])
    work, quick = _append_work(ctx, params, s, call)
    return await ctx.service.submit(s, work, quick=quick)


@answers_now("session/append")
def session_append_now(ctx: RequestContext, params: ht.SessionAppendParams) -> object:
    """A lone append to a loaded session, answered in the read loop's turn (rpc/answer_now.py)."""
    call = _call_of(params)
    s = ctx.service.loaded_now(params["session_id"])
    if s is None:
        return LATER
    work, quick = _append_work(ctx, params, s, call)
    return ctx.service.submit_now(s, work, quick=quick)


class _UpdateFields(TypedDict, total=False):
    output: object                        # absent: the output is left as it is
    status: str | None
    metadata: dict[str, object] | None


@method("session/update")
async def session_update(ctx: RequestContext, params: ht.SessionUpdateParams) -> dict[str, object]:
    p = params
    kwargs: _UpdateFields = {"status": p["status"], "metadata": p["metadata"]}
    if "output" in p:  # null sets the output to null
        kwargs["output"] = p["output"]
    return await _write(ctx, p["session_id"], lambda s: {"node": s.update(p["node_id"], **kwargs).to_dict()})


@method("session/get_node")
async def session_get_node(ctx: RequestContext, params: ht.SessionGetNodeParams) -> dict[str, object]:
    p = params
    # the node's cached encoding, spliced as is: also a node older code stored nested deeper than
    # the reply's encoder allows (docs/storage.md "What a node may hold")
    return await _read(ctx, p["session_id"], lambda s: {"node": orjson.Fragment(s.get_node(p["node_id"]).encoded())})


@method("session/get_attachment")
async def session_get_attachment(ctx: RequestContext, params: ht.SessionGetAttachmentParams) -> dict[str, object]:
    """The bytes (base64) of attachment part `index` of a node's output: an image a user sent, for a
    client that shows it again (an ACP session/load). Only parts a node references are served."""
    p = params

    def work(s: Session) -> dict[str, object]:
        out = s.get_node(p["node_id"]).output
        i = p["index"]
        part = out[i] if isinstance(out, list) and i < len(out) else None
        if not isinstance(part, dict) or not isinstance(part.get("$blob"), str):
            raise NotFoundError("attachment", f"{p['node_id']}[{i}]")
        data = load_attachment(s, part)
        return {"data": base64.b64encode(data).decode(), "media_type": part.get("media_type"),
                "name": part.get("name"), "size": len(data)}
    return await _read(ctx, p["session_id"], work)


@method("session/get_branch")
async def session_get_branch(ctx: RequestContext, params: ht.SessionGetBranchParams) -> dict[str, object]:
    """The branch, or a page of it (limit, before/after cursors = node ids, order asc|desc). Each
    node goes out as its cached encoding (codec.RawArray): a whole 100k-node branch is one join."""
    p = params
    order = p["order"] or "asc"

    def work(s: Session) -> dict[str, object]:
        page = s.get_branch_page(p["head_id"], limit=p["limit"], before=p["before"], after=p["after"],
                                 order=order)
        return {"nodes": RawArray([c.encoded() for c in page.nodes]), "head_id": page.head_id,
                "next_cursor": page.next_cursor, "total": page.total}
    return await _read(ctx, p["session_id"], work)


@method("session/list_branches")
async def session_list_branches(ctx: RequestContext, params: ht.SessionListBranchesParams) -> dict[str, object]:
    """Every branch tip with what tells it apart (core/branch_labels.py: label, from_turn, turns),
    the labels `sessions branches` prints."""
    p = params

    def work(s: Session) -> dict[str, object]:
        rows = [b.to_dict() for b in s.list_branches()]
        label_all(rows, s.get_branch)
        return {"branches": rows, "head_id": s.head_id}
    return await _read(ctx, p["session_id"], work)


@method("session/checkout")
async def session_checkout(ctx: RequestContext, params: ht.SessionCheckoutParams) -> dict[str, object]:
    p = params
    if p["restore_files"]:   # the files follow (rpc/checkpoint_methods.py)
        return await checkout_with_files(ctx, p["session_id"], p["head_id"])

    def work(s: Session) -> dict[str, object]:
        s.checkout(p["head_id"])
        return {"head_id": s.head_id}
    return await _write(ctx, p["session_id"], work)


@method("session/name_branch")
async def session_name_branch(ctx: RequestContext, params: ht.SessionNameBranchParams) -> dict[str, object]:
    p = params

    def work(s: Session) -> dict[str, object]:
        s.name_branch(p["head_id"], p["name"])
        return {"head_id": p["head_id"], "name": p["name"]}
    return await _write(ctx, p["session_id"], work)


@method("session/spawn_branch")
async def session_spawn_branch(ctx: RequestContext, params: ht.SessionSpawnBranchParams) -> ht.SessionSpawnBranchResult:
    p = params
    return await _write(ctx, p["session_id"], lambda s: {"node_id": s.spawn_branch(
        p["caller_node_id"], source=p["source"], name=p["name"], content=p["content"])})


# --- rendering ---------------------------------------------------------------------------------
@method("session/render")
async def session_render(ctx: RequestContext, params: ht.SessionRenderParams) -> dict[str, object]:
    p = params
    fmt = p["format"] or "openai"

    def work(s: Session) -> dict[str, object]:
        # each message already encoded (context/renderer.py): spliced into the frame
        messages, manifest = renderer_for(s).encoded(s, p["head_id"], frame=p["frame"], format=fmt,
                                                     manifest=p["manifest"])
        return {"messages": RawArray(messages), "manifest": manifest}
    return await _read(ctx, p["session_id"], work)


@method("session/compact")
async def session_compact(ctx: RequestContext, params: ht.SessionCompactParams) -> dict[str, object]:
    p = params
    ids = p["covers_ids"]
    return await _write(ctx, p["session_id"], lambda s: compact(s, ids, p["summary"]).to_dict())


@method("session/view")
async def session_view(ctx: RequestContext, params: ht.SessionViewParams) -> ht.SessionViewResult:
    p = params
    kind = p["kind"] or "chat"

    if kind == "chat":
        # the wire type's rows are plain JSON objects; views' TypedDicts are those dicts
        return await _read(ctx, p["session_id"], lambda s: {
            "kind": "chat", "items": cast("list[dict[str, object]]", views.chat_stream(s, p["head_id"]))})
    return await _read(ctx, p["session_id"], lambda s: {
        "kind": "tree", "tree": cast("dict[str, object]", views.call_tree(s, p["root_id"] or ROOT))})


# --- live updates ------------------------------------------------------------------------------
@method("session/subscribe")
async def session_subscribe(ctx: RequestContext, params: ht.SessionSubscribeParams) -> dict[str, object]:
    p = params
    sid = p["session_id"]
    head = await ctx.service.subscribe(ctx.client, sid)
    return {"session_id": sid, "head_id": head, "bound": ctx.service.is_bound(sid)}


@method("session/unsubscribe")
async def session_unsubscribe(ctx: RequestContext, params: ht.SessionUnsubscribeParams) -> ht.SessionUnsubscribeResult:
    p = params
    return {"session_id": p["session_id"], "unsubscribed": ctx.service.unsubscribe(ctx.client, p["session_id"])}


# --- the daemon --------------------------------------------------------------------------------
@method("daemon/status")
async def daemon_status(ctx: RequestContext, params: ht.DaemonStatusParams) -> dict[str, object]:
    return ctx.service.status()


@method("daemon/ping")
async def daemon_ping(ctx: RequestContext, params: ht.DaemonPingParams) -> ht.DaemonPingResult:
    """The trivial method (latency probes, benchmarks); `delay` (≤ 60 s) answers late, for
    clients testing timeouts and $/cancelRequest."""
    if params and params["delay"]:
        await anyio.sleep(params["delay"])
    return {}


@method("daemon/stop")
async def daemon_stop(ctx: RequestContext, params: ht.DaemonStopParams) -> ht.DaemonStopResult:
    """Stop the whole daemon after this answer: in-flight requests finish, open turns are committed."""
    ctx.service.stop_soon()
    return {"stopping": True}


@answers_now("daemon/ping")
def daemon_ping_now(ctx: RequestContext, params: ht.DaemonPingParams) -> object:
    """A ping without a delay, answered in the read loop's turn (rpc/answer_now.py)."""
    return LATER if params and params["delay"] else {}
