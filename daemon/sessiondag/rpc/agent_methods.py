"""agent/* methods: run agent turns inside the daemon through the shared loop (runtime/loop.py).

- `agent/prompt` {session_id, content, branch_from?} runs one user turn (through session_context,
  like every entry point) in a worker thread (own limiter, see `AgentState.run_turn_thread`) under the
  session's async lock, streams
  `agent/did_update` notifications to the requesting client and to every subscriber of the session
  (turn_started, text deltas, nodes appended/updated, tool calls, turn finished, turn_committed — also
  for follow-up turns of sub-agents spawned by this turn), and
  returns {stop_reason, head_id, usage, text, user_node_id, error}. A model/tool failure is not a
  JSON-RPC error: it is a committed error turn (stop_reason "error").
- `max_steps` on agent/prompt: the model calls the turn may make (default 40, as runtime/runtime.py;
  `sessiondag run --max-steps`); then it ends with stop_reason `max_steps`.
- `budget` {usd?, tokens?, session_usd?, session_tokens?} on agent/prompt: limits of this run (the
  turn, its sub-agents and their follow-ups) and of the session over the settings' defaults; a call
  that would go over ends the turn with a `budget_exceeded` error node (docs/usage.md).
- `agent/cancel` {session_id} cancels the running turn of the session ($/cancelRequest on the
  prompt request does the same); the turn ends with a `cancelled` node. With no turn running it
  cancels the sub-agents the session's last prompt spawned that still run (and so their follow-up
  turns), which is what an ACP client's cancel of a prompt waiting for its sub-agents means.
- Server→client requests made while a turn runs: `agent/ask_user` {session_id, question, options?}
  → {answer}, and `agent/request_permission` {session_id, kind, detail} → {granted}. A client that
  does not answer them (or is gone) means: no answer / permission refused. What the daemon's
  settings allow (`agent.allow`: write, run, mcp, `mcp:<server>`, `mcp:<server>/<tool>`, all) is
  granted without asking, as in-process.
- `client_fs: ["read", "write"]` on agent/prompt: the workspace tools read / write files through the
  client that started the turn (`agent/read_text_file` {session_id, path} → {content},
  `agent/write_text_file` {session_id, path, content} → {}; absolute paths already confined to the
  working dir), e.g. an editor's unsaved buffers. A failed answer fails that tool call.

`client_terminal: true`: run_command runs through the client's terminal (`agent/run_in_terminal`
{session_id, command, args, cwd, timeout} → {output, exit_code, signal, truncated, timed_out}), the
argv wrapped in the same sandbox as when the daemon runs it.

`plan_tool: true`: the turn's tools include `update_plan` (the agent's plan, runtime/plan_tool.py).

MCP: the session's MCP servers' tools join the turn's tools (`mcp:<server>/<tool>` nodes, permission
kind `mcp`; agent_mcp.py, docs/mcp.md); a server that does not start fails the prompt with
`mcp_server_failed` before anything is written.

The provider: the `provider_config` the client resolved, else the prompt's own `provider`/`model`/
`temperature`/`max_tokens` over the session's recorded ones, else the daemon's ($SESSIONDAG_PROVIDER
and its settings); see agent_settings.py. A session's first turn records the model it ran on.

The running turns, prompts' runtimes, the default provider and the turn threads' limiter are state of
the daemon (`ctx.service.agents`, agent_state.py), not of this module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Coroutine, Mapping
from typing import TypedDict

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from ..runtime import Runtime
from ..runtime.budget import Budget
from ..runtime.command_tool import Terminal
from ..runtime.context import session_context
from ..runtime.errors import AskUserUnavailableError
from ..runtime.loop import run_turn
from ..runtime.mcp_tools import mcp_tools
from ..runtime.permissions import Permissions, env_permissions
from ..runtime.plan_tool import PLAN_TOOL
from ..runtime.runtime import EventSink
from ..runtime.tools import ClientFs
from ..store import SessionStore
from . import agent_settings, handler_types as ht
from .registry import RequestContext, method


def _from_thread(request: Callable[[str, dict[str, object]], Coroutine[object, None, object]], method: str,
                 params: dict[str, object], token: anyio.lowlevel.EventLoopToken) -> object:
    """`request(method, params)` (the client's: a server→client request) from the turn's worker thread,
    run on the event loop; its answer is the client's JSON, unchecked (the caller narrows it)."""
    return anyio.from_thread.run(request, method, params, token=token)


def _bridge(ctx: RequestContext, sid: str, token: anyio.lowlevel.EventLoopToken) -> tuple[
        EventSink, Callable[[str, list[str] | None], str], Permissions]:
    """Handlers that run in the turn's worker thread and talk to the client on the event loop."""

    def on_event(kind: str, data: dict[str, object]) -> None:
        try:
            anyio.from_thread.run_sync(fan_out, ctx, sid, {"kind": kind, **data, "session_id": sid}, token=token)
        except Exception as e:  # the loop is gone (shutdown): the turn goes on
            print(f"sessiondag: agent/did_update not delivered: {type(e).__name__}: {e}", file=sys.stderr)

    def ask_user(question: str, options: list[str] | None = None) -> str:
        params: dict[str, object] = {"session_id": sid, "question": question}
        if options:
            params["options"] = options
        try:
            res = _from_thread(ctx.client.request, "agent/ask_user", params, token)
        except Exception as e:
            raise AskUserUnavailableError(question, f"the client did not answer: {e}") from None
        answer = res.get("answer") if isinstance(res, dict) else None
        if not isinstance(answer, str):
            raise AskUserUnavailableError(question, "the client's answer is not {answer: string}")
        return answer

    policy = env_permissions(ctx.service.settings)   # agent.allow of the daemon's settings

    def permissions(kind: str, detail: Mapping[str, object]) -> bool:
        if policy(kind, detail):   # write, run, mcp, mcp:<server>, mcp:<server>/<tool>, all
            return True
        try:
            res = _from_thread(ctx.client.request, "agent/request_permission",
                               {"session_id": sid, "kind": kind, "detail": detail}, token)
        except Exception:
            return False
        return isinstance(res, dict) and res.get("granted") is True

    return on_event, ask_user, permissions


def _client_fs(ctx: RequestContext, sid: str, token: anyio.lowlevel.EventLoopToken,
               wanted: Collection[str]) -> ClientFs:
    """A runtime/tools.py ClientFs whose reads/writes are requests to the client of this turn."""

    def read(path: str) -> str:
        try:
            res = _from_thread(ctx.client.request, "agent/read_text_file", {"session_id": sid, "path": path}, token)
        except Exception as e:
            raise OSError(f"the client could not read {path}: {e}") from None
        content = res.get("content") if isinstance(res, dict) else None
        if not isinstance(content, str):
            raise OSError(f"the client's answer for {path} is not {{content: string}}")
        return content

    def write(path: str, content: str) -> None:
        try:
            _from_thread(ctx.client.request, "agent/write_text_file", {"session_id": sid, "path": path, "content": content},
                         token)
        except Exception as e:
            raise OSError(f"the client could not write {path}: {e}") from None

    return ClientFs(read if "read" in wanted else None, write if "write" in wanted else None)


def _client_terminal(ctx: RequestContext, sid: str, token: anyio.lowlevel.EventLoopToken) -> Terminal:
    """run_command's runner through the client's terminal (agent/run_in_terminal): argv (already in
    the sandbox), cwd, timeout -> the client's {output, exit_code, signal, truncated, timed_out}."""

    def run(argv: list[str], cwd: str, timeout: float) -> dict[str, object]:
        try:
            res = _from_thread(ctx.client.request, "agent/run_in_terminal",
                               {"session_id": sid, "command": argv[0], "args": argv[1:], "cwd": cwd,
                                "timeout": timeout}, token)
        except Exception as e:
            raise OSError(f"the client's terminal could not run the command: {e}") from None
        if not isinstance(res, dict) or not isinstance(res.get("output"), str):
            raise OSError("the client's terminal answer is not {output: string, …}")
        return res

    return run


def fan_out(ctx: RequestContext, sid: str, params: dict[str, object]) -> None:
    """`agent/did_update` to the client that sent the prompt and to every subscriber of the session,
    each once (on the event loop; a client that is gone is skipped)."""
    msg: dict[str, object] = {"jsonrpc": "2.0", "method": "agent/did_update", "params": params}
    ctx.client.send(msg)
    for conn in list(ctx.service.subscribers(sid)):
        if conn is not ctx.client:
            conn.send(msg)


def _run_turn(store: SessionStore, sid: str, content: object, branch_from: str | None, rt: Runtime,
              restore_files: bool = False) -> dict[str, object]:
    with session_context(sid, store=store, runtime=rt):
        return run_turn(content, branch_from=branch_from, restore_files=restore_files).to_dict()


class _Steps(TypedDict, total=False):
    max_steps: int     # absent: the Runtime's default


@method("agent/prompt")
async def agent_prompt(ctx: RequestContext, params: ht.AgentPromptParams) -> dict[str, object]:
    settings = agent_settings.pick(params)
    p = params  # checked against rpc_schema/agent.json (rpc/params.py)
    sid = p["session_id"]
    content = p["content"]
    fs_ops = p["client_fs"] or []
    session = await ctx.service.get(sid)   # typed errors for a missing/corrupt session; hooks notifications
    if p["branch_from"] is not None:      # a bad fork point is refused before anything is written
        await ctx.service.run(session, session.get_node, p["branch_from"])
    ctx.service.check_bound(sid)
    on_event, ask_user, permissions = _bridge(ctx, sid, anyio.lowlevel.current_token())
    agents = ctx.service.agents
    provider, model_record = await agent_settings.for_prompt(ctx, session, settings, p["provider_config"])
    working_dir = await ctx.service.run(session, lambda: session.info.get("working_dir"))
    servers = await agents.mcp.servers_for(sid, working_dir)   # started once per session (agent_mcp.py)
    steps: _Steps = {"max_steps": p["max_steps"]} if p["max_steps"] is not None else {}
    rt = Runtime(provider, ask_user=ask_user, permissions=permissions, on_event=on_event, **steps,
                 budget=Budget().over(p["budget"]), extra_tools=tuple(mcp_tools(servers)) + ((PLAN_TOOL,) if p["plan_tool"] else ()),
                 settings=model_record, config=ctx.service.settings)
    rt.record_model = bool(p["record_settings"])
    if fs_ops:
        rt.client_fs = _client_fs(ctx, sid, anyio.lowlevel.current_token(), fs_ops)
    if p["client_terminal"]:
        rt.client_terminal = _client_terminal(ctx, sid, anyio.lowlevel.current_token())
    agents.started(sid, rt)
    async with ctx.service.lock(sid):
        session = await ctx.service.get(sid)  # loaded and hooked again if it was evicted meanwhile
        ctx.service.check_bound(sid)
        agents.active[sid] = rt
        fan_out(ctx, sid, {"kind": "turn_started", "session_id": sid, "client_id": ctx.client.id})
        state = {"done": False}
        try:
            async with anyio.create_task_group() as tg:
                async def watch() -> None:
                    try:
                        await anyio.sleep_forever()
                    finally:  # the request was cancelled ($/cancelRequest, client gone): stop the turn
                        if not state["done"]:
                            rt.cancel()
                tg.start_soon(watch)
                result = await agents.run_turn_thread(_run_turn, ctx.service.store, sid, content, p["branch_from"], rt,
                                                        bool(p["restore_files"]))
                state["done"] = True
                tg.cancel_scope.cancel()
        finally:
            if agents.active.get(sid) is rt:
                del agents.active[sid]
            await ctx.service.check_present(sid)  # a turn in a deleted session acknowledges nothing
    if p["wait_subagents"]:  # as `sessiondag run` asks: the sub-agents' follow-up turns too
        await anyio.to_thread.run_sync(rt.wait_subagents)
        result["head_id"] = await ctx.service.run(session, lambda: session.head_id)
    out = {k: result[k] for k in ("stop_reason", "head_id", "usage", "text", "user_node_id", "error")}
    fan_out(ctx, sid, {"kind": "turn_committed", "session_id": sid, "client_id": ctx.client.id,
                       "result": {**out, "session_id": sid}})
    return out


@method("agent/cancel")
async def agent_cancel(ctx: RequestContext, params: ht.AgentCancelParams) -> ht.AgentCancelResult:
    p = params
    rt = ctx.service.agents.cancellable(p["session_id"])  # no turn runs: sub-agents of the last prompt may
    if rt is None:
        return {"cancelled": False}
    rt.cancel()
    return {"cancelled": True}

