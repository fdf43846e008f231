"""The async client: one method per RPC method, typed results, typed errors, notifications.

    async with await connect(state_dir=..., auto_start=True) as c:
        h = await c.open(working_dir="/repo")                 # SessionHandle
        u = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        async for note in c.notifications(): ...
"""

from __future__ import annotations

from typing import Any, Literal, cast, overload

from .connection import Connection
from .wire.dispatch import RequestHandler  # noqa: F401 - RequestHandler: a public name here before
from .wire import protocol as wp
from .branch_decode import BranchResult, decode_branch
from .wire.types import Branch, BranchPage, Call, SessionHandle, calls_of

_UNSET = object()   # `update`'s output not given (None sets it to null)


class AsyncClient(Connection):
    """One method per RPC method over a `Connection` (connection.py: calls, deadlines, notifications).

    Params and results are the wire types generated from rpc_schema/ (wire/protocol.py: `wp.<Method>Params`,
    `wp.<Method>Result`); nodes, branches and handles come back as the dataclasses of wire/types.py.
    tests/rpc/test_client_signatures.py holds each method's params to its generated Params type."""

    # --- one method per RPC method (names and params as in rpc_schema/; see RPC_METHODS) ----------
    async def open(self, session_id: str | None = None, *, working_dir: str,
                   allow_working_dir_mismatch: bool = False, rebind: bool = False, provider: str | None = None,
                   model: str | None = None, temperature: float | None = None, max_tokens: int | None = None,
                   script: str | None = None,
                   mcp_servers: dict[str, wp.SessionOpenParamsMcpServersValue] | None = None) -> SessionHandle:
        """Resume the session, or create it (a fresh id when None); provider … script become the
        session's model settings; mcp_servers ({name: {command, args, env} | {type, url, headers}})
        its MCP servers in the daemon's memory, started now (docs/mcp.md); `rebind` moves an existing
        session to working_dir, recorded, even while its recorded dir exists."""
        return SessionHandle.from_dict(await self.call("session/open", wp.session_open_params(
            session_id=session_id, working_dir=str(working_dir),
            allow_working_dir_mismatch=allow_working_dir_mismatch or None, rebind=rebind or None, provider=provider,
            model=model, temperature=temperature, max_tokens=max_tokens, script=script, mcp_servers=mcp_servers)))

    async def start(self, session_id: str | None = None, *, working_dir: str) -> SessionHandle:
        return SessionHandle.from_dict(await self.call("session/start", wp.session_start_params(
            session_id=session_id, working_dir=str(working_dir))))

    async def resume(self, session_id: str, *, working_dir: str | None = None,
                     allow_working_dir_mismatch: bool = False,
                     mcp_servers: dict[str, wp.SessionResumeParamsMcpServersValue] | None = None) -> SessionHandle:
        return SessionHandle.from_dict(await self.call("session/resume", wp.session_resume_params(
            session_id=session_id, working_dir=None if working_dir is None else str(working_dir),
            allow_working_dir_mismatch=allow_working_dir_mismatch or None, mcp_servers=mcp_servers)))

    async def reset(self, session_id: str) -> bool:
        r: wp.SessionResetResult = await self.call("session/reset", wp.session_reset_params(session_id=session_id))
        return r["reset"]

    async def append(self, session_id: str, node: wp.NodeInput | Call, *,
                     expected_head: str | None = None) -> tuple[Call, str]:
        """Append a node; returns (stored node, new head id)."""
        wire = node if not isinstance(node, Call) else cast(wp.NodeInput, {   # a Call's fields are NodeInput's
            k: v for k, v in node.to_dict().items() if k not in ("seq", "created_at") and not (k == "id" and not v)})
        r: wp.SessionAppendResult = await self.call("session/append", wp.session_append_params(
            session_id=session_id, node=wire, expected_head=expected_head))
        return Call.from_dict(r["node"]), r["head_id"]

    async def update(self, session_id: str, node_id: str, *, output: object = _UNSET,
                     status: Literal["running", "completed", "error", "cancelled"] | None = None,
                     metadata: dict[str, Any] | None = None) -> Call:
        """Update a node's output (None sets it to null), status, metadata (merged)."""
        params = wp.session_update_params(session_id=session_id, node_id=node_id, status=status, metadata=metadata)
        if output is not _UNSET:
            params["output"] = output
        r: wp.SessionUpdateResult = await self.call("session/update", params)
        return Call.from_dict(r["node"])

    async def get_node(self, session_id: str, node_id: str) -> Call:
        r: wp.SessionGetNodeResult = await self.call("session/get_node", wp.session_get_node_params(
            session_id=session_id, node_id=node_id))
        return Call.from_dict(r["node"])

    async def get_attachment(self, session_id: str, node_id: str, index: int) -> wp.SessionGetAttachmentResult:
        """Attachment part `index` of a node's output: {data (base64), media_type, name, size}."""
        r: wp.SessionGetAttachmentResult = await self.call("session/get_attachment", wp.session_get_attachment_params(
            session_id=session_id, node_id=node_id, index=index))
        return r

    async def get_branch(self, session_id: str, head_id: str | None = None, *, limit: int | None = None,
                         before: str | None = None, after: str | None = None,
                         order: Literal["asc", "desc"] | None = None) -> list[Call]:
        """The branch (start → head), or one page of it; see get_branch_page for the cursors."""
        return (await self.get_branch_page(session_id, head_id, limit=limit, before=before, after=after,
                                           order=order)).nodes

    async def get_branch_page(self, session_id: str, head_id: str | None = None, *, limit: int | None = None,
                              before: str | None = None, after: str | None = None,
                              order: Literal["asc", "desc"] | None = None) -> BranchPage:
        """A page of the branch: `limit` nodes at most, bounded by the node-id cursors `after` /
        `before`, `order` "asc" (from the start) or "desc" (newest first). Pass the page's
        `next_cursor` as `after` (asc) or `before` (desc), with its `head_id`, for the next page."""
        r: wp.SessionGetBranchResult | BranchResult = await self.call(
            "session/get_branch", wp.session_get_branch_params(
                session_id=session_id, head_id=head_id, limit=limit, before=before, after=after, order=order),
            decode=decode_branch)  # a big branch straight into Calls (branch_decode.py)
        if not isinstance(r, dict):  # the typed answer (a BranchAnswer struct, decode_branch)
            return BranchPage(r.nodes, r.head_id, r.next_cursor, r.total)
        return BranchPage(calls_of(r["nodes"]), r["head_id"], r["next_cursor"], r["total"])

    async def list_branches(self, session_id: str) -> list[Branch]:
        r: wp.SessionListBranchesResult = await self.call("session/list_branches", wp.session_list_branches_params(
            session_id=session_id))
        return [Branch.from_dict(b) for b in r["branches"]]

    async def checkout(self, session_id: str, head_id: str, *, restore_files: bool | None = None) -> str:
        """Move HEAD; with `restore_files` the files follow (a restore: WorkspaceDirtyError …)."""
        r: wp.SessionCheckoutResult = await self.call("session/checkout", wp.session_checkout_params(
            session_id=session_id, head_id=head_id, restore_files=restore_files))
        return r["head_id"]

    async def restore(self, session_id: str, node_id: str | None = None, *,
                      what: Literal["files", "conversation", "both"] = "files",
                      paths: list[str] | None = None, dry_run: bool = False, force: bool = False,
                      undo: bool = False, before: bool = False) -> wp.SessionRestoreResult:
        """Put the working dir's files and/or the conversation back to a node (session/restore;
        docs/checkpoints.md; `before`: the files just before that tool call ran). Raises
        WorkspaceDirtyError (its .paths), TurnRunningError, NoCheckpointError."""
        r: wp.SessionRestoreResult = await self.call("session/restore", wp.session_restore_params(
            session_id=session_id, node_id=node_id, what=what, paths=paths, dry_run=dry_run or None,
            force=force or None, undo=undo or None, before=before or None))
        return r

    async def diff(self, session_id: str, to: str | None = None, from_: str | None = None, *,
                   paths: list[str] | None = None, texts: bool | None = None) -> wp.SessionDiffResult:
        """The files (unified diffs) and nodes that differ between two nodes (session/diff); `to`
        "current" is the working dir now, `from_` defaults to the turn before `to`'s; `texts`: both
        versions of each text file too."""
        r: wp.SessionDiffResult = await self.call("session/diff", wp.session_diff_params(
            session_id=session_id, to=to, paths=paths, texts=texts, from_=from_))
        return r

    async def tool_diff(self, session_id: str, node_id: str) -> wp.SessionToolDiffResult:
        """The files one write_file / edit_file call changed, texts before and after it
        (session/tool_diff): {node_id, files: [{path, old_text, new_text} | {path, binary…}]}."""
        r: wp.SessionToolDiffResult = await self.call("session/tool_diff", wp.session_tool_diff_params(
            session_id=session_id, node_id=node_id))
        return r

    async def name_branch(self, session_id: str, head_id: str, name: str | None) -> None:
        await self.call("session/name_branch", wp.session_name_branch_params(
            session_id=session_id, head_id=head_id, name=name))

    async def spawn_branch(self, session_id: str, caller_node_id: str, source: str, *, name: str | None = None,
                           content: object = None) -> str:
        r: wp.SessionSpawnBranchResult = await self.call("session/spawn_branch", wp.session_spawn_branch_params(
            session_id=session_id, caller_node_id=caller_node_id, source=source, name=name, content=content))
        return r["node_id"]

    async def render(self, session_id: str, head_id: str | None = None, *, frame: str | None = None,
                     format: Literal["openai", "anthropic"] = "openai",
                     manifest: wp.RenderManifest | None = None) -> tuple[wp.RenderedMessages, wp.RenderManifest]:
        """(messages, manifest) for the provider `format`; `frame` is the code node whose view is
        rendered (None: the top level), `manifest` one returned before, to replay exactly that."""
        r: wp.SessionRenderResult = await self.call("session/render", wp.session_render_params(
            session_id=session_id, head_id=head_id, frame=frame, format=format, manifest=manifest))
        return r["messages"], r["manifest"]

    async def usage(self, session_id: str, by: Literal["branch", "node", "subagent", "model", "turn"] | None = None,
                    head_id: str | None = None) -> wp.SessionUsageResult:
        """The usage ledger: {session_id, by, head_id, rows, total} (rows add up to total)."""
        r: wp.SessionUsageResult = await self.call("session/usage", wp.session_usage_params(
            session_id=session_id, by=by, head_id=head_id))
        return r

    async def replay(self, session_id: str, node_id: str, *, provider: str | None = None, model: str | None = None,
                     temperature: float | None = None, max_tokens: int | None = None, system: str | None = None,
                     edits: list[wp.SessionReplayParamsEditsItem] | None = None,
                     name: str | None = None) -> wp.SessionReplayResult:
        """Re-send a recorded model call with overrides: {node, branch, text, tool_calls} (docs/replay.md)."""
        r: wp.SessionReplayResult = await self.call("session/replay", wp.session_replay_params(
            session_id=session_id, node_id=node_id, provider=provider, model=model, temperature=temperature,
            max_tokens=max_tokens, system=system, edits=edits, name=name))
        return r

    async def replay_branch(self, session_id: str, from_node: str, mode: Literal["recorded_tools", "live_tools"], *,
                            to_node: str | None = None,
                            provider: str | None = None, model: str | None = None,
                            temperature: float | None = None, max_tokens: int | None = None,
                            system: str | None = None, name: str | None = None,
                            edits: list[wp.SessionReplayBranchParamsEditsItem] | None = None,
                            ) -> wp.SessionReplayBranchResult:
        """Teacher-forced replay of a branch segment (mode recorded_tools | live_tools; `edits` apply to every
        request of the replay; docs/replay.md)."""
        r: wp.SessionReplayBranchResult = await self.call("session/replay_branch", wp.session_replay_branch_params(
            session_id=session_id, from_node=from_node, mode=mode, to_node=to_node, provider=provider, model=model,
            temperature=temperature, max_tokens=max_tokens, system=system, name=name, edits=edits))
        return r

    async def compare(self, session_id: str, a: str, b: str) -> wp.SessionCompareResult:
        """Two branches or calls side by side (docs/replay.md)."""
        r: wp.SessionCompareResult = await self.call("session/compare", wp.session_compare_params(
            session_id=session_id, a=a, b=b))
        return r

    async def compact(self, session_id: str, covers_ids: list[str], summary: str) -> Call:
        r: wp.SessionCompactResult = await self.call("session/compact", wp.session_compact_params(
            session_id=session_id, covers_ids=covers_ids, summary=summary))
        return Call.from_dict(r)

    async def commit(self, session_id: str, message: str | None = None) -> str | None:
        r: wp.SessionCommitResult = await self.call("session/commit", wp.session_commit_params(
            session_id=session_id, message=message))
        return r["commit"]

    # --- sessions through git remotes (docs/sync.md) -------------------------------------------
    async def push(self, session_id: str, remote: str | None = None, *, dry_run: bool = False,
                   allow_secrets: bool = False) -> wp.SessionPushResult:
        """Push the session to `remote` (a name or git URL; None: the default remote)."""
        r: wp.SessionPushResult = await self.call("session/push", wp.session_push_params(
            session_id=session_id, remote=remote, dry_run=dry_run or None, allow_secrets=allow_secrets or None))
        return r

    async def pull(self, session_id: str, remote: str | None = None, *,
                   working_dir: str | None = None) -> wp.SessionPullResult:
        """Pull (clone or merge) the session from `remote`; subscribers hear did_change {kind: reload}."""
        r: wp.SessionPullResult = await self.call("session/pull", wp.session_pull_params(
            session_id=session_id, remote=remote, working_dir=working_dir))
        return r

    async def remote_list(self, remote: str | None = None) -> wp.RemoteListResult:
        """{remotes: the configured ones, sessions: what `remote` (or the default) holds}."""
        r: wp.RemoteListResult = await self.call("remote/list", wp.remote_list_params(remote=remote))
        return r

    @overload
    async def view(self, session_id: str, kind: Literal["chat"] = "chat", *, head_id: str | None = None,
                   root_id: str | None = None) -> list[dict[str, Any]]: ...

    @overload
    async def view(self, session_id: str, kind: Literal["tree"], *, head_id: str | None = None,
                   root_id: str | None = None) -> dict[str, Any]: ...

    async def view(self, session_id: str, kind: Literal["chat", "tree"] = "chat", *, head_id: str | None = None,
                   root_id: str | None = None) -> list[dict[str, Any]] | dict[str, Any]:
        """The chat stream (kind "chat": a list of items) or the call tree (kind "tree": its root)."""
        r: wp.SessionViewResult = await self.call("session/view", wp.session_view_params(
            session_id=session_id, kind=kind, head_id=head_id, root_id=root_id))
        return r["items"] if r["kind"] == "chat" else r["tree"]

    async def subscribe(self, session_id: str) -> wp.SessionSubscribeResult:
        r: wp.SessionSubscribeResult = await self.call("session/subscribe", wp.session_subscribe_params(
            session_id=session_id))
        return r

    async def unsubscribe(self, session_id: str) -> bool:
        r: wp.SessionUnsubscribeResult = await self.call("session/unsubscribe", wp.session_unsubscribe_params(
            session_id=session_id))
        return r["unsubscribed"]

    async def status(self) -> wp.DaemonStatusResult:
        r: wp.DaemonStatusResult = await self.call("daemon/status")
        return r

    async def ping(self, delay: float | None = None) -> wp.DaemonPingResult:
        r: wp.DaemonPingResult = await self.call("daemon/ping", wp.daemon_ping_params(delay=delay))
        return r

    async def stop_daemon(self) -> wp.DaemonStopResult:
        r: wp.DaemonStopResult = await self.call("daemon/stop")
        return r

    async def shutdown(self) -> None:
        await self.call("shutdown")

    async def agent_prompt(self, session_id: str, content: str | wp.AgentPromptParamsContent1, *,
                           branch_from: str | None = None, client_fs: list[Literal["read", "write"]] | None = None,
                           wait_subagents: bool | None = None, max_steps: int | None = None,
                           provider: str | None = None, model: str | None = None,
                           temperature: float | None = None, max_tokens: int | None = None,
                           script: str | None = None, budget: wp.AgentPromptParamsBudget | None = None,
                           restore_files: bool | None = None,
                           provider_config: wp.AgentPromptParamsProviderConfig | None = None,
                           record_settings: bool | None = None, plan_tool: bool | None = None,
                           client_terminal: bool | None = None) -> wp.AgentPromptResult:
        """Run one agent turn; answers {stop_reason, head_id, usage, text, user_node_id, error}.
        `budget`: {usd?, tokens?, session_usd?, session_tokens?} (docs/usage.md). `restore_files`
        with `branch_from`: the files go back to the fork point first. `provider_config`: a provider
        this client resolved itself (its key is used in memory only); `record_settings`: this
        prompt's model becomes the session's (a model change); `plan_tool`: the agent may keep a
        plan (update_plan); `client_terminal`: run_command runs in this client's terminal
        (agent/run_in_terminal); `max_steps`: model calls the turn may make (default 40)."""
        r: wp.AgentPromptResult = await self.call("agent/prompt", wp.agent_prompt_params(
            session_id=session_id, content=content, branch_from=branch_from, client_fs=client_fs,
            wait_subagents=wait_subagents, max_steps=max_steps, provider=provider, model=model,
            temperature=temperature, max_tokens=max_tokens, script=script, budget=budget, restore_files=restore_files,
            provider_config=provider_config, record_settings=record_settings, plan_tool=plan_tool,
            client_terminal=client_terminal))
        return r

    async def agent_cancel(self, session_id: str) -> wp.AgentCancelResult:
        r: wp.AgentCancelResult = await self.call("agent/cancel", wp.agent_cancel_params(session_id=session_id))
        return r


    async def list(self, working_dir: str | None = None) -> list[wp.SessionSummary]:
        r: wp.SessionListResult = await self.call("session/list", wp.session_list_params(
            working_dir=None if working_dir is None else str(working_dir)))
        return r["sessions"]

# rpc_schema request method -> the client method that calls it (tests/rpc/test_client_signatures.py)
RPC_METHODS = {
    "session/open": "open", "session/start": "start", "session/resume": "resume", "session/reset": "reset",
    "session/list": "list", "session/append": "append", "session/update": "update",
    "session/get_node": "get_node", "session/get_attachment": "get_attachment",
    "session/get_branch": "get_branch_page",
    "session/list_branches": "list_branches", "session/checkout": "checkout",
    "session/restore": "restore", "session/diff": "diff", "session/tool_diff": "tool_diff",
    "session/name_branch": "name_branch", "session/spawn_branch": "spawn_branch", "session/render": "render",
    "session/compact": "compact", "session/commit": "commit", "session/view": "view",
    "session/subscribe": "subscribe", "session/unsubscribe": "unsubscribe", "daemon/status": "status",
    "daemon/ping": "ping", "daemon/stop": "stop_daemon", "shutdown": "shutdown",
    "agent/prompt": "agent_prompt", "agent/cancel": "agent_cancel",
    "session/push": "push", "session/pull": "pull", "remote/list": "remote_list",
    "session/usage": "usage", "session/replay": "replay", "session/compare": "compare",
    "session/replay_branch": "replay_branch",
}
