"""The daemon's requests to this adapter while a turn runs, answered by asking the ACP client.

- `agent/request_permission` -> `session/request_permission` (allow once / always / reject; "always"
  is remembered per session and tool; a cancelled prompt refuses what is still being asked). A
  write's request carries its diff, from the old text the daemon sends (`detail.old_text`: the
  adapter reads no file itself); it leaves the tool call's status alone (in_progress). An MCP
  tool's (kind mcp) offers "always" for the tool and for its whole server. The session's mode
  (modes.py) answers first: `plan` refuses, `auto-edit` grants writes
- `agent/read_text_file` / `agent/write_text_file` -> `fs/read_text_file` / `fs/write_text_file`
- `agent/run_in_terminal` -> `terminal/*` (terminals.py)
- `agent/ask_user` with options -> `session/request_permission` whose options are the answers;
  a free-form question is refused (ACP has no stable way to ask one)

Each handler takes the SessiondagAgent first."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

from . import modes, terminals
from .agent_api import AgentApi
from .turns import SessionState
from .updates import WRITES, abs_path, tool_title, write_diff

if TYPE_CHECKING:
    from sessiondag_client import AsyncClient
    from sessiondag_client.wire import protocol as wp

log = logging.getLogger("sessiondag.acp")


async def on_permission(agent: AgentApi, p: wp.AgentRequestPermissionParams) -> wp.AgentRequestPermissionResult:
    st = agent.state_for(p.get("session_id"))
    detail = p.get("detail") or {}
    tool = str(detail.get("tool") or p.get("kind"))
    if st is None:
        return {"granted": False}
    await agent.pump.outbox.join()   # the tool call is on the client before we ask about it
    path = abs_path(st.cwd, detail.get("path"))
    preset = modes.decide(st.mode, str(p.get("kind")))   # the session's mode first (modes.py)
    if preset is False:
        return {"granted": False}
    # a write's old text, read by the daemon as its tools read (confined, no symlink followed);
    # "old_text" absent: unknown (too big, binary), so the question shows no diff
    known = tool in WRITES and "old_text" in detail
    old = detail.pop("old_text", None)
    server = tool.partition("/")[0] if p.get("kind") == "mcp" else None   # "mcp:<server>"
    if preset or tool in st.always or (server and server in st.always):
        keep_old(st, path, tool, old, known)
        return {"granted": True}
    node_id = find_tool_node(st, detail)
    args = {k: v for k, v in detail.items() if k != "tool"}
    options = [PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
               PermissionOption(option_id="allow_always", name=f"Always allow {tool} in this session",
                                kind="allow_always"),
               PermissionOption(option_id="reject_once", name="Reject", kind="reject_once")]
    if server:   # an MCP tool: its whole server can be allowed too
        options.insert(2, PermissionOption(option_id="allow_server", name=f"Always allow every tool of "
                                           f"MCP server {server[4:]} in this session", kind="allow_always"))
    # what the write would do, so the user does not approve blind; no status: the call stays in_progress
    node_args = (st.view.running.get(node_id) or {}).get("input") if node_id else None
    diff = write_diff(path, tool, node_args, old) if path and isinstance(node_args, dict) and known else None
    call = ToolCallUpdate(tool_call_id=node_id or f"permission-{tool}", title=tool_title(tool, args),
                          kind={"run": "execute", "write": "edit"}.get(str(p.get("kind")), "other"),
                          raw_input=detail, locations=[{"path": path}] if path else None,
                          content=[diff] if diff is not None else None)
    try:
        res = await ask_permission(agent, st, call, options)
    except Exception as e:  # noqa: BLE001 - no answer: refused
        log.warning("acp: permission request failed: %s", e)
        return {"granted": False}
    if res is None:   # the prompt was cancelled before the client answered
        return {"granted": False}
    outcome = res.outcome
    chosen = getattr(outcome, "option_id", None) if getattr(outcome, "outcome", None) == "selected" else None
    if chosen == "allow_always":
        st.always.add(tool)
    elif chosen == "allow_server" and server:
        st.always.add(server)
    granted = chosen in ("allow_once", "allow_always", "allow_server")
    if granted:
        keep_old(st, path, tool, old, known)
    return {"granted": granted}


async def ask_permission(agent: AgentApi, st: SessionState, call: ToolCallUpdate,
                         options: list[PermissionOption]) -> RequestPermissionResponse | None:
    """The client's answer, or None once the prompt is cancelled (a client should then answer
    `cancelled` itself; one that does not must not leave the daemon's turn waiting)."""
    ask = asyncio.ensure_future(agent.conn.request_permission(session_id=st.session_id, tool_call=call,
                                                             options=options))
    turn = st.turn
    if turn is None:
        return await ask
    stop = asyncio.ensure_future(turn.wait_until(lambda: False))
    try:
        await asyncio.wait({ask, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if not ask.done():
        ask.cancel()
        return None
    return ask.result()


def find_tool_node(st: SessionState, detail: Mapping[str, object]) -> str | None:
    """The running tool call a permission request is about (the daemon sends tool + path/command)."""
    running = st.view.running
    for nid in reversed(running):
        node = running[nid]
        args = node.get("input") or {}
        if node.get("name") == detail.get("tool") and all(args.get(k) == v for k, v in detail.items() if k != "tool"):
            return nid
    return None


def keep_old(st: SessionState, path: str | None, tool: str, old: str | None, known: bool) -> None:
    """Remember the text before a granted write, for the diff of its tool call when the daemon
    recorded no blobs for it (a write through the client's file system)."""
    if path is not None and known:
        st.view.old_text[path] = old


async def on_ask_user(agent: AgentApi, p: wp.AgentAskUserParams) -> wp.AgentAskUserResult:
    """A multiple-choice question is put to the user as a permission request whose options are the
    answers (plus "Decline"); ACP has no stable way to ask a free-form one, so that is refused."""
    st = agent.state_for(p.get("session_id"))
    options = [o for o in p.get("options") or () if isinstance(o, str)]
    if st is None or not options:
        raise RuntimeError("ACP has no stable way to ask the user a free-form question")
    await agent.pump.outbox.join()
    question = str(p.get("question") or "")
    node_id = find_tool_node(st, {"tool": "ask_user", "question": question})
    call = ToolCallUpdate(tool_call_id=node_id or "ask_user", title=tool_title("ask_user", {"question": question}),
                          kind="other", status="pending", raw_input={"question": question, "options": options})
    choices = [PermissionOption(option_id=f"answer-{i}", name=o, kind="allow_once") for i, o in enumerate(options)]
    choices.append(PermissionOption(option_id="decline", name="Decline to answer", kind="reject_once"))
    res = await ask_permission(agent, st, call, choices)
    outcome = getattr(res, "outcome", None)
    chosen = getattr(outcome, "option_id", "") if getattr(outcome, "outcome", None) == "selected" else ""
    if not chosen.startswith("answer-"):
        raise RuntimeError("the user declined to answer")
    return {"answer": options[int(chosen.split("-", 1)[1])]}


async def on_read(agent: AgentApi, p: wp.AgentReadTextFileParams) -> wp.AgentReadTextFileResult:
    st = agent.state_for(p.get("session_id"))
    if st is None:
        raise RuntimeError("unknown session")
    res = await agent.conn.read_text_file(session_id=st.session_id, path=p["path"])
    return {"content": res.content}


async def on_write(agent: AgentApi, p: wp.AgentWriteTextFileParams) -> wp.AgentWriteTextFileResult:
    st = agent.state_for(p.get("session_id"))
    if st is None:
        raise RuntimeError("unknown session")
    await agent.conn.write_text_file(session_id=st.session_id, path=p["path"], content=p["content"])
    return {}


def register(client: AsyncClient, agent: AgentApi) -> None:
    """Answer the daemon's requests on `client` (its connection) with the handlers above."""
    client.on_request("agent/request_permission", functools.partial(on_permission, agent))
    client.on_request("agent/ask_user", functools.partial(on_ask_user, agent))
    client.on_request("agent/read_text_file", functools.partial(on_read, agent))
    client.on_request("agent/write_text_file", functools.partial(on_write, agent))
    client.on_request("agent/run_in_terminal", functools.partial(terminals.on_run_in_terminal, agent))
