"""The `_sessiondag/` extension methods (what ACP has no word for). Params and results use ACP's
camelCase; node ids are sessiondag's.

- `_sessiondag/list_branches {sessionId}` -> {branches: [{headId, name, turns, …}], headId}
- `_sessiondag/checkout {sessionId, headId}` -> {headId}: later prompts continue that branch
- `_sessiondag/fork {sessionId, nodeId, content}` -> a new sibling of `nodeId` with edited content.
  A user message: the edited message is sent as a new turn forked from its predecessor (streamed like
  session/prompt) -> {stopReason, headId, userNodeId}. Any other node: a sibling with the edited output
  is appended and becomes HEAD -> {nodeId, headId}.
- `_sessiondag/graph {sessionId}` -> {tree, headId}: the whole session DAG (every branch, spawn
  branches included) as the daemon's `session/view` tree.
- `_sessiondag/restore {sessionId, nodeId?, what?, paths?, dryRun?, force?, undo?, before?}` -> the
  daemon's session/restore result in camelCase: the working dir's files (and/or HEAD) back to a node;
  `before` with a tool call's id (its `toolCallId`): the files just before that call ran.
- `_sessiondag/diff {sessionId, from?, to?, paths?}` -> session/diff in camelCase: the files
  (unified diffs) and nodes that differ between two nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from acp.schema import PromptRequest
from pydantic import ValidationError

from .agent_api import AgentApi
from .content import PromptBlock, prompt_to_content
from .errors import invalid, unknown_session
from .turns import SessionState

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

# an extension method's params: the client's JSON object, read key by key (_str, _opt)
Params = Mapping[str, object]


def _str(params: Params, key: str) -> str:
    v = params.get(key)
    if not isinstance(v, str) or not v:
        raise invalid(f"{key} must be a non-empty string", field=key)
    return v


def _camel(d: Mapping[str, object]) -> dict[str, object]:
    return {"".join(w.capitalize() if i else w for i, w in enumerate(k.split("_"))): v for k, v in d.items()}


async def handle(agent: AgentApi, method: str, params: Params) -> dict[str, object]:
    fn = METHODS.get(method)
    if fn is None:
        from acp import RequestError
        raise RequestError.method_not_found("_" + method)
    sid = _str(params, "sessionId")
    st = agent.sessions.get(sid)
    if st is None:
        raise unknown_session(sid)
    return await fn(agent, st, params)


async def list_branches(agent: AgentApi, st: SessionState, params: Params) -> dict[str, object]:
    r: wp.SessionListBranchesResult = await agent.call("session/list_branches", {"session_id": st.sid})
    return {"branches": [_camel(b) for b in r["branches"]], "headId": r["head_id"]}


async def checkout(agent: AgentApi, st: SessionState, params: Params) -> dict[str, object]:
    r: wp.SessionCheckoutResult = await agent.call("session/checkout",
                                                   {"session_id": st.sid, "head_id": _str(params, "headId")})
    return {"headId": r["head_id"]}


async def fork(agent: AgentApi, st: SessionState, params: Params) -> dict[str, object]:
    node_id = _str(params, "nodeId")
    content = params.get("content")
    if isinstance(content, list):
        content = prompt_to_content(_blocks(content))
    if not isinstance(content, str):
        raise invalid("content is a string or a list of ACP content blocks", field="content")
    got: wp.SessionGetNodeResult = await agent.call("session/get_node", {"session_id": st.sid, "node_id": node_id})
    node = got["node"]
    if node.get("predecessor") is None:
        raise invalid("the node is not on a chat chain (no predecessor)", field="nodeId", nodeId=node_id)
    if node["role"] == "user" and node.get("caller") == "ROOT":
        res = await agent.run_turn(st, content, branch_from=node["predecessor"])
        if res.field_meta is None:   # run_turn's answer always has it; checked, not asserted (python -O)
            from acp import RequestError
            raise RequestError.internal_error({"reason": "the turn's answer carries no _meta"})
        meta = res.field_meta["sessiondag"]
        return {"stopReason": res.stop_reason, "headId": meta["headId"], "userNodeId": meta["userNodeId"]}
    sibling = {"role": node["role"], "name": node["name"], "output": content, "caller": node.get("caller"),
               "predecessor": node["predecessor"], "metadata": {"edited_from": node_id}}
    r: wp.SessionAppendResult = await agent.call("session/append", {"session_id": st.sid, "node": sibling})
    await agent.call("session/commit", {"session_id": st.sid, "message": f"edit of {node_id}"})
    return {"nodeId": r["node"]["id"], "headId": r["head_id"]}


def _blocks(content: list[object]) -> list[PromptBlock]:
    """`content` as ACP content blocks, checked as session/prompt's are (the SDK's models)."""
    try:
        req: PromptRequest = PromptRequest.model_validate({"sessionId": "-", "prompt": content})
    except ValidationError:
        raise invalid("content is a string or a list of ACP content blocks", field="content") from None
    return req.prompt


async def graph(agent: AgentApi, st: SessionState, params: Params) -> dict[str, object]:
    r: wp.SessionViewResult1 = await agent.call("session/view", {"session_id": st.sid, "kind": "tree"})
    h: wp.SessionListBranchesResult = await agent.call("session/list_branches", {"session_id": st.sid})
    return {"tree": r["tree"], "headId": h["head_id"]}


def _camel_deep(v: object) -> object:
    if isinstance(v, dict):
        return {k2: _camel_deep(x) for k2, x in _camel(v).items()}
    if isinstance(v, list):
        return [_camel_deep(x) for x in v]
    return v


def _result(r: Mapping[str, object]) -> dict[str, object]:
    """A daemon result (an object) in camelCase, all the way down."""
    return {k: _camel_deep(x) for k, x in _camel(r).items()}


def _opt(params: Params, key: str, kind: type) -> object:
    v = params.get(key)
    if v is not None and not isinstance(v, kind):
        raise invalid(f"{key} must be a {kind.__name__}", field=key)
    return v


async def restore(agent: AgentApi, st: SessionState, params: Params) -> dict[str, object]:
    p = {"session_id": st.sid, "node_id": _opt(params, "nodeId", str), "what": _opt(params, "what", str),
         "paths": _opt(params, "paths", list), "dry_run": _opt(params, "dryRun", bool),
         "force": _opt(params, "force", bool), "undo": _opt(params, "undo", bool),
         "before": _opt(params, "before", bool)}
    return _result(await agent.call("session/restore", {k: v for k, v in p.items() if v is not None}))


async def diff(agent: AgentApi, st: SessionState, params: Params) -> dict[str, object]:
    p = {"session_id": st.sid, "from": _opt(params, "from", str), "to": _opt(params, "to", str),
         "paths": _opt(params, "paths", list), "texts": _opt(params, "texts", bool)}
    return _result(await agent.call("session/diff", {k: v for k, v in p.items() if v is not None}))


METHODS = {"sessiondag/list_branches": list_branches, "sessiondag/checkout": checkout, "sessiondag/fork": fork,
           "sessiondag/graph": graph, "sessiondag/restore": restore, "sessiondag/diff": diff}
