"""Sub-agents: the `spawn_agent(task)` tool.

Spawning opens a spawn branch (the store's `spawn_branch` primitive, caller = the spawn_agent tool
node) and runs the sub-agent on it in its own thread, concurrently with the spawning turn. The
sub-agent's work is the agentic function `sub_agent`, whose docstring instructs every model call
it makes. When it finishes:

1. the attach pointer lands on the spawning call (`metadata.attached` of the spawn_agent node);
2. a follow-up turn (`metadata.source = "task_followup"`) lands at the session's current HEAD,
   through the same session_context + run_turn as any turn, under the one turn lock per session.

So N sub-agents finishing together form one chain (notice₁ → answer₁ → notice₂ → answer₂), never N
sibling branches: the second follow-up reads a HEAD that already holds the first answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .agentic import agentic_function
from .context import (TurnState, current_call_id, current_frames, current_runtime, current_writer,
                      session_context, turn_scope)
from .loop import record_system_prompt_at, run_chain, run_turn, toolset
from .subagent_pool import Attached
from .tools import Tool, ToolContext, _obj
from .turns import turn_lock

if TYPE_CHECKING:
    from ..store import SessionStore

RESULT_CHARS = 4000


@agentic_function(expose="io")
def sub_agent(task: str, branch_root: str) -> str:
    """You are a sub-agent. You were given one delegated task; the conversation so far is only that
    task. Work on it alone with the tools you have, in the same working directory. Do not ask for
    more work and do not start other agents. Finish with a short report of what you found or
    changed: it is passed back verbatim to the agent that delegated the task."""
    w = current_writer()
    rt = current_runtime()
    assert w is not None and rt is not None  # it runs in _run_sub_agent's session_context
    tools = toolset(rt)
    with w.lock:
        tip = w.session.graph.spawn_heads.get(branch_root, branch_root)
    tip = record_system_prompt_at(w, rt, tools, tip)
    turn = TurnState(branch_root, tip, [branch_root])
    with turn_scope(turn):
        stop, text = run_chain(w, rt, turn, tools)
    if stop != "end_turn":
        raise RuntimeError(f"the sub-agent stopped without an answer ({stop})")
    return text


MAX_DEPTH = 1


def spawn_agent(ctx: ToolContext, task: str, name: str | None = None) -> str:
    depth = sum(1 for f in current_frames() if f.name == "sub_agent")
    if depth >= MAX_DEPTH:
        raise RuntimeError(f"a sub-agent cannot start sub-agents (depth cap {MAX_DEPTH}); do the task yourself")
    w = current_writer()
    rt = current_runtime()
    call_id = current_call_id()
    assert w is not None and rt is not None and call_id is not None  # a tool runs in its call's scope
    label = name or f"sub-{call_id[:8]}"
    root = w.spawn_branch(call_id, source="task", name=label, content=task)
    rt.emit("node_appended", session_id=w.session_id, node=w.get_node(root).to_dict())
    rt.subagent_pool.start(_run_sub_agent, w.store, w.session_id, call_id, root, task, label)
    return f"spawned sub-agent {label!r} on branch {root}; its result arrives as a follow-up turn"


def _run_sub_agent(store: SessionStore, session_id: str, spawn_node: str, root: str, task: str, label: str) -> None:
    rt = current_runtime()
    w = current_writer()
    assert w is not None and rt is not None  # the spawning turn's context, copied
    try:
        text, status = sub_agent(task, root), "completed"
    except Exception as e:
        text, status = f"{type(e).__name__}: {e}", "error"
    tip = w.session.graph.spawn_heads.get(root, root)
    attached: Attached = {"branch_root": root, "head_id": tip, "status": status, "result": text[:RESULT_CHARS]}
    notice = (f"[sub-agent {label!r} finished: {status}]\nTask: {task}\nResult:\n{text[:RESULT_CHARS]}")
    with session_context(session_id, store=store, runtime=rt):
        w = current_writer()
        assert w is not None  # inside the session_context just entered
        with turn_lock(w):
            w.update(spawn_node, metadata={"attached": attached})
            rt.subagent_pool.finished.append(attached)
            run_turn(notice, source="task_followup", user_name="task")


SPAWN_AGENT_TOOL = Tool(
    "spawn_agent",
    "Delegate a self-contained task to a sub-agent that runs concurrently on its own branch; "
    "its result arrives later as a follow-up message.",
    _obj({"task": {"type": "string"}, "name": {"type": "string"}}, ["task"]), spawn_agent)
