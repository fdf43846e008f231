"""update_plan: the agent's plan (a todo list) for the work of a turn, as a tool it keeps current.

Offered when the client asks for it (`agent/prompt {plan_tool: true}`: an ACP editor shows it as
the session's plan). Each call sends the whole plan — entries `{content, status: pending |
in_progress | completed, priority?: high | medium | low}` — and is recorded like any tool call (a
code node `update_plan` whose input is the plan), so the latest call on a branch is its plan. Needs
no permission: it changes nothing outside the session."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .tools import Tool, _obj

if TYPE_CHECKING:
    from .tools import ToolContext

STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("high", "medium", "low")
MAX_ENTRIES = 100


def update_plan(ctx: ToolContext, entries: object) -> str:
    if not isinstance(entries, list) or len(entries) > MAX_ENTRIES:
        raise ValueError(f"entries must be a list of at most {MAX_ENTRIES} plan entries")
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("content"), str) or not e["content"].strip():
            raise ValueError(f"entry {i}: content must be a non-empty string")
        if e.get("status") not in STATUSES:
            raise ValueError(f"entry {i}: status must be one of {', '.join(STATUSES)}")
        if e.get("priority", "medium") not in PRIORITIES:
            raise ValueError(f"entry {i}: priority must be one of {', '.join(PRIORITIES)}")
    done = sum(e["status"] == "completed" for e in entries)
    return f"plan updated: {len(entries)} entries, {done} completed"


ENTRY = _obj({"content": {"type": "string"}, "status": {"enum": list(STATUSES)},
              "priority": {"enum": list(PRIORITIES)}}, ["content", "status"])
PLAN_TOOL = Tool("update_plan", "Keep your plan for this task current: send the whole list of steps each "
                 "time, each with its status (pending, in_progress, completed) and priority.",
                 _obj({"entries": {"type": "array", "items": ENTRY}}, ["entries"]), update_plan)
