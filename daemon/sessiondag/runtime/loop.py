"""The agent loop, shared by the daemon's dispatcher, `sessiondag run`, Python callers and sub-agents.

A user turn (`run_turn`, inside a session_context): record the system prompt if it changed, append
the user node at HEAD (or fork it from `branch_from`), then repeat: render → model call → tool calls
as code nodes under the llm node (`metadata.tool_call_id`) — until the model answers without tool
calls. The turn always ends with `commit_turn`, also when it failed (the failing node is `error`,
HEAD stops on it) or was cancelled (`cancelled`). Turns of one session are serialized by one lock
per session (turns.py; follow-up turns of sub-agents take the same lock). The tools are the
runtime's (`rt.tools`, injected by runtime.py): the loop imports neither ask_user nor the sub-agents.

Chain conventions: user node caller ROOT, predecessor HEAD ("ROOT" for the first); llm node caller
= the user node, predecessor = the previous chain node; tool node caller = the llm node,
predecessor = the previous chain node (the llm node for the first tool call of a step).
"""

from __future__ import annotations

import base64
import time
import traceback
from typing import TYPE_CHECKING

from ..context.attachments import attach
from ..context.graphinfo import SYSTEM_PROMPT_NAME
from ..context.system_prompt import build_system_prompt, latest_system_prompt, prompt_hash, record_system_prompt
from ..core.model import ROOT, Call, error_metadata, usage_of
from ..core.usage import LATENCY_KEY
from .agentic import jsonable
from .baseline import Baseline, settle_quietly
from .calls import finish, inject_instructions, model_call, render
from .context import (Frame, SessionWriter, TurnState, call_scope, current_frames, current_runtime,
                      current_writer, session_context, turn_scope)
from .checkpoints import restore
from .errors import RunCancelled
from .file_records import FileRecorder
from .tool_thread import call_tool
from .model_settings import record, record_first
from .runtime_api import RuntimeApi
from .session_title import record_title_first
from .tools import Tool, ToolContext, ToolResult
from .turns import TurnResult, turn_lock

if TYPE_CHECKING:
    from ..store import SessionStore
    from ..store.session import Session


def toolset(rt: RuntimeApi) -> list[Tool]:
    """The one unified tool list the runtime was given (`rt.tools`, runtime.py `default_tools` plus
    extra tools): the same for turns and sub-agents, so the system prompt stays byte-stable."""
    return list(rt.tools)


def user_content(w: SessionWriter, content: object) -> object:
    """The user node's output: the text, or [text part, attachment parts…] for
    {text, attachments: [{data (base64 str or bytes), media_type, name}]}."""
    if isinstance(content, str):
        return content
    if not isinstance(content, dict) or not isinstance(content.get("text", ""), str):
        raise ValueError("content is a string or {text, attachments}")
    refs = []
    atts = content.get("attachments") or []
    if atts:
        for a in atts:
            data = a.get("data")
            raw = data if isinstance(data, bytes) else base64.b64decode(data or "")
            with w.lock:
                refs.append(attach(w.session, raw, media_type=a.get("media_type") or "application/octet-stream",
                                   name=a.get("name") or "attachment"))
    text = content.get("text", "")
    if not refs:
        return text
    return ([{"type": "text", "text": text}] if text else []) + refs


def system_prompt_text(rt: RuntimeApi, tools: list[Tool]) -> str:
    return build_system_prompt(identity=rt.identity, tools=[t.spec()["function"] for t in tools])


def record_system_prompt_for(w: SessionWriter, rt: RuntimeApi, tools: list[Tool]) -> None:
    text = system_prompt_text(rt, tools)
    with w.lock:
        record_system_prompt(w.session, text)


def record_system_prompt_at(w: SessionWriter, rt: RuntimeApi, tools: list[Tool], tip: str) -> str:
    """Pin the system prompt on a chain that is not HEAD's (a spawn branch): append the
    context/system_prompt node after `tip` if that chain's latest one differs. Returns the new tip."""
    text = system_prompt_text(rt, tools)
    h = prompt_hash(text)
    with w.lock:
        prev = latest_system_prompt(w.session, tip)
        if prev is not None and prev.metadata.get("sha256") == h:
            return tip
        return w.append(Call("code", SYSTEM_PROMPT_NAME, output=text, caller=ROOT, predecessor=tip,
                             metadata={"sha256": h})).id


def run_turn(content: object, *, branch_from: str | None = None, source: str | None = None,
             user_name: str = "user", restore_files: bool = False) -> TurnResult:
    """One user turn in the current session_context. Never raises for a model/tool failure: the
    failure is recorded, committed, and reported in the result (stop_reason error/cancelled)."""
    w = current_writer()
    rt = current_runtime()
    if w is None or rt is None:
        raise RuntimeError("run_turn needs an active session_context with a runtime")
    tools = toolset(rt)
    with turn_lock(w):
        output = user_content(w, content)
        with w.lock:  # the session's first turn records the model it runs on (so does a model change)
            (record if getattr(rt, "record_model", False) else record_first)(w.session, getattr(rt, "settings", None))
            record_title_first(w.session, output)
        if branch_from is not None:  # retry / edit: the new turn forks from there
            with w.lock:
                w.session.checkout(branch_from)
            if restore_files:   # the files too, as they were there (refused if changed since the last snapshot)
                restore(w.session, branch_from, "files")
        baseline = Baseline.start(w.session)   # the files before the first turn, beside it (baseline.py)
        record_system_prompt_for(w, rt, tools)
        pred = w.head_id
        md: dict[str, object] = {}
        if source:
            md["source"] = source
        u = w.append(Call("user", user_name, output=output, caller=ROOT, predecessor=pred, metadata=md))
        rt.emit("node_appended", session_id=w.session_id, node=u.to_dict())
        before = (lambda: baseline.settle(rt)) if baseline else None   # a cancel stops the wait
        turn = TurnState(u.id, u.id, [u.id], before_tools=before)
        result = TurnResult(w.session_id, u.id, "end_turn", user_node_id=u.id)
        try:
            with turn_scope(turn):
                result.stop_reason, result.text = run_chain(w, rt, turn, tools)
        except RunCancelled as e:
            result.stop_reason = "cancelled"
            _record_failure(w, rt, turn, e, "cancelled")
        except Exception as e:
            result.stop_reason = "error"
            result.error = error_metadata(e, traceback.format_exc())
            _record_failure(w, rt, turn, e, "error")
        finally:
            if baseline is not None and turn.before_tools is not None and result.stop_reason != "end_turn":
                w.commit_turn()   # ended before a tool ran: no wait for the first snapshot (baseline.py)
                baseline.owe(w, u.id)
            else:
                if baseline is not None:
                    settle_quietly(baseline)
                w.commit_turn(checkpoint=True, opener=u.id)  # the files as the turn left them (docs/checkpoints.md)
        result.head_id = w.head_id
        result.node_ids = list(turn.node_ids)
        for nid in turn.node_ids:
            i, o = usage_of(w.get_node(nid))
            result.input_tokens += i
            result.output_tokens += o
        rt.emit("turn_finished", session_id=w.session_id, result=result.to_dict())
        return result


def _record_failure(w: SessionWriter, rt: RuntimeApi, turn: TurnState, e: BaseException, status: str) -> None:
    """Make sure the failure is a node on the chain: model_call already finalized its own node;
    anything else (render failed, cancel between steps) gets an llm node at the tip."""
    nid = getattr(e, "sessiondag_node_id", None)
    if nid is not None:
        return
    md = {} if status == "cancelled" else {"error": error_metadata(e, traceback.format_exc())}
    assert turn.start_id is not None  # a turn's chain starts at its user node
    c = w.append(Call("llm", rt.provider.model, output="", caller=turn.start_id, predecessor=turn.tip,
                      status=status, metadata=md))
    turn.tip = c.id
    turn.node_ids.append(c.id)
    rt.emit("node_appended", session_id=w.session_id, node=c.to_dict())


def run_chain(w: SessionWriter, rt: RuntimeApi, turn: TurnState, tools: list[Tool]) -> tuple[str, str]:
    """Extend `turn`'s chain until the model answers without tool calls. Returns (stop_reason, text)."""
    assert turn.start_id is not None  # a chat chain starts at its user node or spawn root
    by_name = {t.name: t for t in tools}
    specs = [t.spec() for t in tools]
    wd = w.session.info.get("working_dir") or "."
    frames = current_frames()
    for _ in range(rt.max_steps):
        rt.check_cancelled()
        messages, manifest = render(w, turn.tip, None)
        messages = inject_instructions(messages, frames)
        try:
            llm, comp = model_call(w, rt, messages, specs, caller=turn.start_id, predecessor=turn.tip,
                                   manifest=manifest, frames=frames)
        except BaseException as e:
            _note_failed_node(w, turn, e)
            raise
        turn.tip = llm.id
        turn.node_ids.append(llm.id)
        if not comp.tool_calls:
            return "end_turn", comp.text
        if turn.before_tools is not None:   # the first turn's baseline is known before a tool runs
            turn.before_tools()
            turn.before_tools = None
        for tc in comp.tool_calls:
            rt.check_cancelled()
            tool = by_name.get(tc.name)
            name = (tool and tool.node_name) or tc.name   # an MCP tool's node: mcp:<server>/<tool>
            tnode = w.append(Call("code", name, input=tc.arguments, caller=llm.id, predecessor=turn.tip,
                                  status="running", metadata={"tool_call_id": tc.id}))
            turn.tip = tnode.id
            turn.node_ids.append(tnode.id)
            rt.emit("tool_call", session_id=w.session_id, node=tnode.to_dict())
            run_tool(w, rt, tool, tnode, tc.arguments, wd)
    return "max_steps", ""


def _note_failed_node(w: SessionWriter, turn: TurnState, e: BaseException) -> None:
    """model_call tags the exception with the node it finalized; that node ends the chain."""
    nid = getattr(e, "sessiondag_node_id", None)
    if nid is not None:
        turn.tip = nid
        turn.node_ids.append(nid)


def _in_frame(tnode: Call, tool: Tool, ctx: ToolContext, args: dict[str, object]) -> object:
    """The tool's result: whatever its function returns (a str, a ToolResult, anything JSON-able)."""
    with call_scope(Frame(tnode.id, tnode.name, None)):
        return tool.fn(ctx, **args)


def run_tool(w: SessionWriter, rt: RuntimeApi, tool: Tool | None, tnode: Call, args: dict[str, object], wd: str) -> None:
    """Run one tool call inside its node's frame, in its own thread (tool_thread.py: a cancel ends
    the turn whatever the tool is doing). A tool failure becomes an `error` tool node whose output
    tells the model what went wrong (the loop goes on); a cancel propagates. The node records the
    call's wall time (`sessiondag.latency_ms`, as a model call does) whatever its outcome."""
    files = FileRecorder(w, tnode.name, args, wd)   # before/after blobs of a file-writing tool
    t0 = time.monotonic()

    def took() -> dict[str, object]:
        return {LATENCY_KEY: round((time.monotonic() - t0) * 1000, 3), **files.metadata()}
    try:
        if tool is None:
            raise LookupError(f"unknown tool {tnode.name!r}")
        result = call_tool(w, rt, _in_frame, tnode, tool, ToolContext(wd, rt, w), args)
    except RunCancelled:
        finish(w, rt, tnode.id, status="cancelled", metadata=took())
        raise
    except Exception as e:
        finish(w, rt, tnode.id, output=f"error: {type(e).__name__}: {e}", status="error",
               metadata={"error": error_metadata(e, traceback.format_exc()), **took()})
        return
    if isinstance(result, ToolResult):
        finish(w, rt, tnode.id, output=result.text, status="completed",
               metadata={**(result.metadata or {}), **took()})
        return
    finish(w, rt, tnode.id, output=result if isinstance(result, str) else jsonable(result), status="completed",
           metadata=took())


def run_task(task: object, *, session_id: str | None = None, working_dir: str | None = None,
             store: SessionStore | None = None, runtime: RuntimeApi | None = None, branch_from: str | None = None, wait_subagents: bool = True,
             allow_working_dir_mismatch: bool = False, restore_files: bool = False) -> TurnResult:
    """The Python API of `sessiondag run`: one turn in a session (new unless `session_id`), then wait
    for the sub-agents it spawned and their follow-up turns. Raises SessionResumeError if refused.
    No `runtime`: the one session_context builds (a default Runtime)."""
    with session_context(session_id, working_dir=working_dir, store=store, runtime=runtime,
                         allow_working_dir_mismatch=allow_working_dir_mismatch) as h:
        rt = h.runtime
        assert rt is not None  # session_context built one (create_runtime_if_none)
        result = run_turn(task, branch_from=branch_from, restore_files=restore_files)
    if wait_subagents:
        rt.wait_subagents()
        result.head_id = h.store.session(h.session_id).head_id
    return result


def retry_point(session: Session, node_id: str) -> str | None:
    """The `branch_from` that retries the turn containing `node_id`: the predecessor of its user node
    (None for a user node that starts a chain: a spawn root)."""
    g = session.graph
    c = g.get(node_id)
    while c.caller != ROOT:
        c = g.caller_of(c)
    if c.predecessor is None:
        raise ValueError(f"node {node_id!r} is not on a chat chain")
    while c.role != "user" and c.predecessor not in (None, ROOT):
        back = g.step_back(c)
        assert back is not None  # its predecessor is a node: a step back reaches it
        c = back
    return c.predecessor
