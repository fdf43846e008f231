"""Daemon events and branch nodes -> ACP `session/update` payloads (SDK models).

`Translator` holds one session's view of the running work: which nodes belong to the main chain and
which to a sub-agent's spawn branch (a sub-agent is shown as the `spawn_agent` tool call: its text
streams into that call's content, its own tool calls are tool calls whose `_meta.sessiondag.parent`
is the spawn call), and the old text of files about to be written (for diffs).

- text deltas of main-chain llm nodes -> `agent_message_chunk` (messageId = node id); reasoning
  deltas -> `agent_thought_chunk` (in replay: the node's metadata.reasoning, before its text)
- tool node appended -> `tool_call` (kind, title, locations, rawInput, status in_progress)
- tool node finalized -> `tool_call_update` (completed / failed, text output, or a diff for writes:
  from the blobs the node recorded, `blob_diffs`, else from the old text the permission carried;
  `rawOutput` is the object {output, error})
- llm node completed -> `usage_update` (tokens of that call in context / the context window, and
  `cost`: the session's cumulative dollars, seeded from session/usage, none once a call has no price)
- a sub-agent's result (the spawn call's `attached` pointer) -> `tool_call_update` completed / failed
- a follow-up turn's user node -> `user_message_chunk`
- a completed update_plan call (the agent's plan) -> `plan` (no tool call), live and in replay
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acp import text_block
from acp.schema import (AgentMessageChunk, AgentPlanContentUpdate, AgentPlanRemovedUpdate, AgentPlanUpdate,
                        AgentThoughtChunk, AvailableCommandsUpdate, ConfigOptionUpdate, ContentToolCallContent, Cost,
                        CurrentModeUpdate, FileEditToolCallContent, ImageContentBlock, PlanEntry, SessionInfoUpdate,
                        TerminalToolCallContent, ToolCallLocation, ToolCallProgress, ToolCallStart, ToolCallStatus,
                        UsageUpdate, UserMessageChunk)

from .content import output_text

if TYPE_CHECKING:
    from sessiondag_client import Call
    from sessiondag_client.wire import protocol as wp

# what `session/update` carries (the SDK's Client.session_update), and a tool call's content
SessionUpdate = UserMessageChunk | AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress | \
    AgentPlanUpdate | AgentPlanContentUpdate | AgentPlanRemovedUpdate | AvailableCommandsUpdate | \
    CurrentModeUpdate | ConfigOptionUpdate | SessionInfoUpdate | UsageUpdate
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
# a node as JSON (the wire's Call, a notification's node, a client Call's to_dict()): its input, output
# and metadata are whatever JSON its writer stored (docs/architecture.md "Type checking")
Node = Mapping[str, Any]

ROOT = "ROOT"
KINDS = {"read_file": "read", "list_dir": "search", "search_text": "search", "write_file": "edit",
         "edit_file": "edit", "run_command": "execute", "spawn_agent": "think", "ask_user": "other"}
WRITES = ("write_file", "edit_file")
FILES_KEY = "workspace_files"   # a write's before/after blobs (docs/checkpoints.md "Tool calls")
REASONING_KEY = "reasoning"     # an llm node's streamed reasoning (runtime/calls.py)
PLAN = "update_plan"            # the agent's plan tool (runtime/plan_tool.py): `plan` updates, no tool call
STATUS: dict[str, ToolCallStatus] = {"running": "in_progress", "completed": "completed", "error": "failed",
                                     "cancelled": "failed"}


TITLES: dict[str, Callable[[Mapping[str, object]], str]] = {
    "read_file": lambda a: f"Read {a.get('path')}",
    "list_dir": lambda a: f"List {a.get('path') or '.'}",
    "search_text": lambda a: f"Search {a.get('pattern')!r} in {a.get('path') or '.'}",
    "write_file": lambda a: f"Write {a.get('path')}",
    "edit_file": lambda a: f"Edit {a.get('path')}",
    "run_command": lambda a: f"Run `{a.get('command')}`",
    "spawn_agent": lambda a: (f"Sub-agent{' ' + str(a['name']) if a.get('name') else ''}: "
                              f"{' '.join(str(a.get('task') or '').split())[:80]}"),
    "ask_user": lambda a: f"Ask: {a.get('question')}",
}


def tool_title(name: str, args: Mapping[str, object]) -> str:
    fn = TITLES.get(name)
    return fn(args) if fn is not None else name


def abs_path(cwd: str, path: object) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    return os.path.normpath(os.path.join(cwd, path))


def raw_output(node: Node) -> dict[str, object]:
    """A tool node's `rawOutput`: always an object (clients validate it as one), `output` as stored
    and `error` ({type, message}) when the call failed, else null."""
    err = (node.get("metadata") or {}).get("error")
    if isinstance(err, dict):
        err = {k: err.get(k) for k in ("type", "message")}
    elif err is not None:
        err = {"type": "error", "message": str(err)}
    return {"output": node.get("output"), "error": err}


def write_diff(path: str, name: str, args: Mapping[str, object], old: str | None) -> FileEditToolCallContent | None:
    """The diff a write_file / edit_file call with `args` makes to a file whose text is `old`
    (None: no such file yet)."""
    if name == "write_file":
        new = str(args.get("content", ""))
    elif old is not None:
        new = old.replace(str(args.get("old", "")), str(args.get("new", "")), 1)
    else:
        return None
    return FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)


def blob_diffs(cwd: str, tool_diff: wp.SessionToolDiffResult) -> list[ToolContent]:
    """A write's diffs from the blobs its node recorded (the daemon's session/tool_diff): the
    file's text just before the call and just after it. Binary or oversized files give none."""
    out: list[ToolContent] = []
    for f in tool_diff.get("files") or ():
        path = abs_path(cwd, f.get("path"))
        if path is not None and "new_text" in f:
            out.append(FileEditToolCallContent(type="diff", path=path, old_text=f.get("old_text"),
                                               new_text=f.get("new_text") or ""))
    return out


def recorded_files(node: Node) -> bool:
    """True when a write's node recorded before/after blobs (metadata.workspace_files)."""
    return node.get("name") in WRITES and bool((node.get("metadata") or {}).get(FILES_KEY))


def plan_update(node: Node) -> list[AgentPlanUpdate]:
    """A completed update_plan call -> the `plan` update (the whole plan; a client replaces its own)."""
    entries = (node.get("input") or {}).get("entries") if isinstance(node.get("input"), dict) else None
    if node.get("status") != "completed" or not isinstance(entries, list):
        return []
    return [AgentPlanUpdate(session_update="plan", entries=[
        PlanEntry(content=str(e.get("content")), status=e.get("status"), priority=e.get("priority") or "medium")
        for e in entries if isinstance(e, dict)], field_meta={"sessiondag": {"nodeId": node.get("id")}})]


def _text(s: str) -> list[ToolContent]:
    return [ContentToolCallContent(type="content", content=text_block(s))] if s else []


def text_content(output: object) -> list[ToolContent]:
    """A tool's stored output as tool-call content (text)."""
    return _text(output_text(output))


class Translator:
    def __init__(self, session_id: str, cwd: str, context_window: int = 128_000):
        self.session_id = session_id
        self.cwd = cwd
        self.context_window = context_window
        self.lanes: dict[str, str | None] = {}        # node id -> spawn call id (None: main chain)
        self.spawn_calls: set[str] = set()
        self.sub_text: dict[str, dict[str, str]] = {}  # spawn call id -> llm node id -> text so far
        self.followups: set[str] = set()               # user node ids of sub-agent follow-up turns
        self.old_text: dict[str, str | None] = {}      # absolute path -> text before a write
        self.running: dict[str, Node] = {}             # tool node id -> node, while it runs
        self.attached_calls: set[str] = set()          # spawn calls whose sub-agent reported back
        self.others: dict[str, Node] = {}              # nodes other clients' turns appended
        self.cost_usd = 0.0                            # the session's cost so far (seed_cost + calls seen)
        self.cost_known = True                         # False once a call without a price is seen
        self.costed: set[str] = set()                  # llm nodes counted in cost_usd

    def seed_cost(self, total: wp.UsageTotalsOfASetOfLlmCalls) -> None:
        """Start from the session's ledger total (session/usage) when the session is opened."""
        self.cost_usd = float(total.get("priced_cost_usd") or 0.0)
        self.cost_known = total.get("cost_usd") is not None or not total.get("calls")

    def lane_of(self, node: Node) -> str | None:
        caller = node.get("caller")
        if not isinstance(caller, str):
            return None
        if caller in self.spawn_calls:
            return caller
        return self.lanes.get(caller)

    def _meta(self, lane: str | None, node_id: str) -> dict[str, dict[str, str]]:
        d = {"nodeId": node_id}
        if lane is not None:
            d["parent"] = lane
        return {"sessiondag": d}

    # --- live events (agent/did_update) ---------------------------------------------------------
    def on_event(self, kind: str | None, p: Mapping[str, Any]) -> list[SessionUpdate]:
        if kind == "text_delta":
            return self._delta(p["node_id"], p.get("delta") or "")
        if kind == "reasoning_delta":
            return self._thought(p["node_id"], p.get("delta") or "")
        node = p.get("node")
        if not isinstance(node, dict):
            return []
        if node.get("name") == PLAN and node.get("role") == "code":   # the agent's plan: no tool call
            return plan_update(node) if kind == "node_updated" and self.lane_of(node) is None else []
        if kind == "node_appended":
            return self._appended(node)
        if kind == "tool_call":
            return [self._tool_start(node)]
        if kind == "node_updated":
            return self._updated(node)
        return []

    def _appended(self, node: Node) -> list[SessionUpdate]:
        nid = node["id"]
        self.lanes[nid] = self.lane_of(node)
        if node.get("role") == "user" and node.get("caller") == ROOT:
            self.lanes[nid] = None
            if (node.get("metadata") or {}).get("source") == "task_followup":
                self.followups.add(nid)
                return [UserMessageChunk(session_update="user_message_chunk", message_id=nid,
                                         content=text_block(output_text(node.get("output"))))]
        return []

    def _delta(self, node_id: str, delta: str) -> list[SessionUpdate]:
        lane = self.lanes.get(node_id)
        if lane is None:
            return [AgentMessageChunk(session_update="agent_message_chunk", message_id=node_id,
                                      content=text_block(delta))] if delta else []
        texts = self.sub_text.setdefault(lane, {})
        texts[node_id] = texts.get(node_id, "") + delta
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=lane,
                                 content=_text("\n\n".join(t for t in texts.values() if t)))]

    def _thought(self, node_id: str, delta: str) -> list[SessionUpdate]:
        """The model's streamed reasoning -> `agent_thought_chunk` (a sub-agent's stays in its call)."""
        if self.lanes.get(node_id) is not None or not delta:
            return []
        return [AgentThoughtChunk(session_update="agent_thought_chunk", message_id=node_id, content=text_block(delta))]

    def _tool_start(self, node: Node, status: str = "in_progress") -> ToolCallStart:
        nid, name = node["id"], node.get("name") or "tool"
        given = node.get("input")
        args: dict[str, object] = given if isinstance(given, dict) else {}
        lane = self.lane_of(node)
        self.lanes[nid] = lane
        if name == "spawn_agent":
            self.spawn_calls.add(nid)
        if status == "in_progress":
            self.running[nid] = node
        path = abs_path(self.cwd, args.get("path"))
        return ToolCallStart(session_update="tool_call", tool_call_id=nid, title=tool_title(name, args),
                             kind=KINDS.get(name, "other"), status=status, raw_input=args,
                             locations=[ToolCallLocation(path=path)] if path else None,
                             field_meta=self._meta(lane, nid))

    def _updated(self, node: Node) -> list[SessionUpdate]:
        md = node.get("metadata") or {}
        if node.get("role") == "llm" and node.get("status") == "completed":
            used = int(md.get("gen_ai.usage.input_tokens") or 0) + int(md.get("gen_ai.usage.output_tokens") or 0)
            cost = md.get("sessiondag.cost")
            if node["id"] in self.costed:
                pass
            elif isinstance(cost, dict) and isinstance(cost.get("usd"), (int, float)):
                self.cost_usd += float(cost["usd"])
            else:
                self.cost_known = False  # "unknown": no cumulative figure from here on
            self.costed.add(node["id"])
            total = Cost(amount=round(self.cost_usd, 9), currency="USD") if self.cost_known else None
            return [UsageUpdate(session_update="usage_update", used=used, size=max(self.context_window, used),
                                cost=total, field_meta={"sessiondag": {"nodeId": node["id"]}})]
        if node.get("role") != "code" or "tool_call_id" not in md:
            return []
        return [self.tool_final(node)]

    def tool_final(self, node: Node) -> ToolCallProgress:
        nid, name, status = node["id"], node.get("name"), node.get("status")
        self.running.pop(nid, None)
        md = node.get("metadata") or {}
        out = output_text(node.get("output"))
        given = node.get("input")
        args: dict[str, object] = given if isinstance(given, dict) else {}
        acp_status = STATUS.get(status or "", "completed")
        content = _text(out)
        if name == "spawn_agent":
            att = md.get("attached")
            if att:   # the sub-agent finished (replay, or the attach record)
                acp_status = "completed" if att.get("status") == "completed" else "failed"
                content = _text(str(att.get("result") or ""))
            elif status == "completed":
                acp_status = "in_progress"   # spawned: the sub-agent runs on its branch
        elif name in WRITES and status == "completed":
            diff = self._diff(name, args)
            if diff is not None:
                content = [diff]
        return ToolCallProgress(session_update="tool_call_update", tool_call_id=nid, status=acp_status,
                                content=content, raw_output=raw_output(node),
                                field_meta=self._meta(self.lanes.get(nid), nid))

    def _diff(self, name: str, args: Mapping[str, object]) -> FileEditToolCallContent | None:
        path = abs_path(self.cwd, args.get("path"))
        if path is None:
            return None
        return write_diff(path, name, args, self.old_text.pop(path, None))

    def attached(self, node_id: str, att: Mapping[str, object]) -> list[SessionUpdate]:
        """The attach pointer landed on a spawn call: the sub-agent is done."""
        if node_id not in self.spawn_calls:
            return []
        self.attached_calls.add(node_id)
        self.sub_text.pop(node_id, None)
        return [ToolCallProgress(session_update="tool_call_update", tool_call_id=node_id,
                                 status="completed" if att.get("status") == "completed" else "failed",
                                 content=_text(str(att.get("result") or "")),
                                 field_meta={"sessiondag": {"nodeId": node_id, "branchRoot": att.get("branch_root"),
                                                            "headId": att.get("head_id")}})]


    def subagents_running(self) -> bool:
        return bool(self.spawn_calls - self.attached_calls)

    def on_change(self, ch: Mapping[str, Any]) -> list[SessionUpdate]:
        """A record another client's turn wrote (session/did_change; no text deltas there): its user
        message, its answers once complete, its tool calls."""
        if ch.get("kind") == "append" and isinstance(ch.get("node"), dict):
            node = ch["node"]
            md = node.get("metadata") or {}
            self.others[node["id"]] = node
            if node.get("role") == "user" and node.get("caller") == ROOT:
                return [UserMessageChunk(session_update="user_message_chunk", message_id=node["id"],
                                         content=text_block(output_text(node.get("output"))))]
            if node.get("role") == "code" and "tool_call_id" in md and node.get("name") != PLAN:
                return [self._tool_start(node)]
            return []
        node = self.others.get(str(ch.get("node_id"))) if ch.get("kind") == "update" else None
        if node is None:
            return []
        fields = dict(ch.get("fields") or {})
        md = {**(node.get("metadata") or {}), **(fields.pop("metadata", None) or {})}
        node = self.others[node["id"]] = {**node, **fields, "metadata": md}
        if node.get("role") == "llm" and node.get("status") != "running" and output_text(node.get("output")):
            return [AgentMessageChunk(session_update="agent_message_chunk", message_id=node["id"],
                                      content=text_block(output_text(node.get("output"))))]
        if node.get("role") == "code" and node.get("name") == PLAN:
            return plan_update(node)
        if node.get("role") == "code" and "tool_call_id" in md:
            return [self.tool_final(node)]
        return []


def _replay_tool(t: Translator, d: Node, parent: str | None = None,
                 diffs: Mapping[str, list[ToolContent]] | None = None) -> ToolCallStart:
    """One finished (or still running) tool node as a single `tool_call` with its final state
    (a write's diff from its recorded blobs: `diffs`, node id -> diff contents)."""
    md = d.get("metadata") or {}
    start = t._tool_start(d, status=STATUS.get(d.get("status") or "", "completed"))
    fin = t.tool_final(d)
    if diffs is not None and d["id"] in diffs:   # the recorded blobs decide (no diff for a binary file)
        fin.content = diffs[d["id"]] or text_content(d.get("output"))
    if d.get("name") == "spawn_agent" and not md.get("attached") and fin.status == "in_progress":
        fin.status = STATUS.get(d.get("status") or "", "completed")
    start.status, start.content, start.raw_output = fin.status, fin.content, fin.raw_output
    if parent is not None and start.field_meta is not None:
        start.field_meta["sessiondag"]["parent"] = parent
    return start


def replay(nodes: Sequence[Call | Node], cwd: str,
           sub_branches: Mapping[str, Sequence[Call | Node]] | None = None,
           context_window: int = 128_000, images: Mapping[str, list[ImageContentBlock]] | None = None,
           diffs: Mapping[str, list[ToolContent]] | None = None) -> list[SessionUpdate]:
    """The current branch (root -> head) as session/update payloads: user and agent messages with
    the node id as message id (a user's images as image blocks: `images`, node id -> blocks),
    tool calls with their final status, diffs and rawOutput, a `usage_update` after each completed
    model call as it was sent live; a write's diff from its recorded blobs (`diffs`). A sub-agent's own tool calls (`sub_branches`: spawn call id ->
    its spawn branch) follow its spawn call, with `_meta.sessiondag.parent` as when they ran."""
    t = Translator("", cwd, context_window)
    out: list[SessionUpdate] = []
    for c in nodes:
        d = c.to_dict() if hasattr(c, "to_dict") else dict(c)
        role, md = d.get("role"), d.get("metadata") or {}
        if role == "user" and d.get("caller") == ROOT:
            shown = (images or {}).get(d["id"]) or []
            output = d.get("output")
            if shown and isinstance(output, list):   # the images go as images, not as placeholders
                output = [p for p in output if not (isinstance(p, dict) and p.get("type") == "image")]
            text = output_text(output)
            if text:
                out.append(UserMessageChunk(session_update="user_message_chunk", message_id=d["id"],
                                            content=text_block(text)))
            out += [UserMessageChunk(session_update="user_message_chunk", message_id=d["id"], content=b)
                    for b in shown]
        elif role == "llm":
            thought = md.get(REASONING_KEY)
            if isinstance(thought, str) and thought:
                out.append(AgentThoughtChunk(session_update="agent_thought_chunk", message_id=d["id"],
                                             content=text_block(thought)))
            text = output_text(d.get("output"))
            if text:
                out.append(AgentMessageChunk(session_update="agent_message_chunk", message_id=d["id"],
                                             content=text_block(text)))
            out += t._updated(d)   # its usage_update, when it completed
        elif role == "code" and d.get("name") == PLAN:
            out += plan_update(d)
        elif role == "code" and "tool_call_id" in md:
            out.append(_replay_tool(t, d, diffs=diffs))
            for sc in (sub_branches or {}).get(d["id"], ()):
                sd = sc.to_dict() if hasattr(sc, "to_dict") else dict(sc)
                if sd.get("role") == "code" and "tool_call_id" in (sd.get("metadata") or {}) and sd.get("name") != PLAN:
                    out.append(_replay_tool(t, sd, parent=d["id"], diffs=diffs))
    return out
