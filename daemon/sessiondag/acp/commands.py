"""Slash commands (`available_commands_update`), the terminal chat's that make sense in an editor:

- `/retry` — run the last user message again, forked from before it (a new branch; the old one stays)
- `/branches` — the session's branches (id, length, which is current)
- `/checkout <headId>` — continue another branch (later prompts and a load follow it)
- `/usage` — tokens of the current branch so far (input, output, per model call)
- `/restore <nodeId> [before] [files|conversation|both] [dry-run] [force]`, `/restore undo` — the
  working dir's files (and/or the conversation) back to a node, or just before a tool call
  (restore_command.py)

A prompt whose first text block starts with one of them is the command, answered as agent message
text; anything else (an unknown `/word` too) is an ordinary prompt. Each is sent to the client
after session/new, load and resume."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp import update_agent_message_text
from acp.schema import AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, PromptResponse, \
    UnstructuredCommandInput

from . import restore_command
from .agent_api import AgentApi
from .content import PromptBlock, output_text
from .errors import invalid
from .turns import SessionState

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

COMMANDS = {
    "retry": ("Run the last user message again on a new branch", None),
    "branches": ("List the session's branches", None),
    "checkout": ("Continue another branch", "the head id of a branch (see /branches)"),
    "usage": ("Tokens used on the current branch", None),
    "restore": ("Put the files (or the conversation) back to a node, or just before a tool call",
                restore_command.HINT),
}


def update() -> AvailableCommandsUpdate:
    return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[
        AvailableCommand(name=n, description=d, input=AvailableCommandInput(root=UnstructuredCommandInput(hint=h))
                         if h else None) for n, (d, h) in COMMANDS.items()])


def parse(prompt: Sequence[PromptBlock]) -> tuple[str, str] | None:
    first = prompt[0] if prompt else None
    text = getattr(first, "text", None) if getattr(first, "type", None) == "text" else None
    if not isinstance(text, str) or not text.startswith("/"):
        return None
    name, _, arg = text[1:].partition(" ")
    return (name, arg.strip()) if name in COMMANDS else None


async def run(agent: AgentApi, st: SessionState, name: str, arg: str) -> PromptResponse:
    if name == "retry":
        return await _retry(agent, st)
    if name == "branches":
        r: wp.SessionListBranchesResult = await agent.call("session/list_branches", {"session_id": st.sid})
        cur = st.tip() or r["head_id"]
        lines = [f"{'*' if b['head_id'] == cur else ' '} {b['head_id']}  {b.get('name') or ''}"
                 f"  ({b.get('turns', '?')} turns)" for b in r["branches"]]
        text = "\n".join(lines)
    elif name == "checkout":
        if not arg:
            raise invalid("/checkout needs a head id (see /branches)", field="prompt")
        if st.fork is not None:
            raise invalid("a fork follows its own branch: /checkout in the session it was forked from",
                          field="prompt")
        co: wp.SessionCheckoutResult = await agent.call("session/checkout",
                                                        {"session_id": st.sid, "head_id": arg.split()[0]})
        text = f"now on {co['head_id']}"
    elif name == "restore":
        text = await restore_command.run(agent, st, arg)
    else:
        nodes = await (await agent.daemon()).get_branch(st.sid, st.tip())
        calls = [n for n in nodes if n.role == "llm"]
        i = sum(int(n.metadata.get("gen_ai.usage.input_tokens") or 0) for n in calls)
        o = sum(int(n.metadata.get("gen_ai.usage.output_tokens") or 0) for n in calls)
        text = f"{i} input + {o} output tokens in {len(calls)} model calls on this branch"
    await agent.conn.session_update(session_id=st.session_id, update=update_agent_message_text(text))
    return PromptResponse(stop_reason="end_turn", field_meta={"sessiondag": {"command": name}})


async def _retry(agent: AgentApi, st: SessionState) -> PromptResponse:
    nodes = await (await agent.daemon()).get_branch(st.sid, st.tip())
    last = next((n for n in reversed(nodes) if n.role == "user" and n.caller == "ROOT"), None)
    if last is None or last.predecessor is None:
        raise invalid("/retry: there is no user message to run again on this branch", field="prompt")
    # its text (attachments are not sent again), as a new turn forked from before it
    res: PromptResponse = await agent.run_turn(st, output_text(last.output), branch_from=last.predecessor)
    return res
