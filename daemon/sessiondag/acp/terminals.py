"""run_command in the client's terminal (`terminal/*`), when the client offers terminals.

The daemon sends `agent/run_in_terminal {command, args, cwd, timeout}` — the argv already wrapped in
the sandbox the daemon would run it in — and this adapter runs it through the client:
`terminal/create` (shown in the run_command tool call as terminal content, so the user watches it
live), `terminal/wait_for_exit` until it exits, the timeout passes or the prompt is cancelled
(then `terminal/kill`), `terminal/output`, and always `terminal/release`. The answer is the output
and the exit status."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from acp.schema import TerminalToolCallContent, ToolCallProgress

from .agent_api import AgentApi
from .turns import SessionState

if TYPE_CHECKING:
    from sessiondag_client.wire import protocol as wp

OUTPUT_LIMIT = 64 * 1024   # what the daemon's own run keeps (runtime/command_tool.py MAX_OUTPUT)


def offered(agent: AgentApi) -> bool:
    return bool(getattr(agent.client_caps, "terminal", False))


def _running_command(st: SessionState) -> str | None:
    running = st.view.running
    return next((nid for nid in reversed(running) if running[nid].get("name") == "run_command"), None)


async def on_run_in_terminal(agent: AgentApi, p: wp.AgentRunInTerminalParams) -> wp.AgentRunInTerminalResult:
    st = agent.state_for(p.get("session_id"))
    if st is None or not offered(agent):
        raise RuntimeError("no client terminal for this session")
    await agent.pump.outbox.join()   # the tool call is on the client first
    conn, sid = agent.conn, st.session_id
    term = await conn.create_terminal(session_id=sid, command=p["command"], args=list(p.get("args") or ()),
                                      cwd=p.get("cwd"), output_byte_limit=OUTPUT_LIMIT)
    tid = term.terminal_id
    try:
        node_id = _running_command(st)
        if node_id is not None:
            await conn.session_update(session_id=sid, update=ToolCallProgress(
                session_update="tool_call_update", tool_call_id=node_id,
                content=[TerminalToolCallContent(type="terminal", terminal_id=tid)]))
        timed_out = False
        wait = asyncio.ensure_future(conn.wait_for_terminal_exit(session_id=sid, terminal_id=tid))
        stop = asyncio.ensure_future(st.turn.wait_until(lambda: False)) if st.turn is not None else None
        try:
            done, _ = await asyncio.wait({wait, *([stop] if stop else [])}, timeout=float(p.get("timeout") or 60),
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            if stop is not None:
                stop.cancel()
        if wait not in done:   # the timeout, or the prompt was cancelled: the command is killed
            timed_out = stop is None or stop not in done
            await conn.kill_terminal(session_id=sid, terminal_id=tid)
            await asyncio.wait_for(wait, 10)
        out = await conn.terminal_output(session_id=sid, terminal_id=tid)
        status = out.exit_status or wait.result()
        return {"output": out.output, "truncated": bool(out.truncated), "timed_out": timed_out,
                "exit_code": getattr(status, "exit_code", None), "signal": getattr(status, "signal", None)}
    finally:
        await conn.release_terminal(session_id=sid, terminal_id=tid)
