"""ACP session lifecycle over the daemon: session/new, load (with the replay), resume, fork, list,
close and delete (docs/acp.md). Each function takes the SessiondagAgent first; a fork's ACP id
names a branch of a daemon session (forks.py)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from acp.schema import (CloseSessionResponse, DeleteSessionResponse, ForkSessionResponse, ImageContentBlock,
                        ListSessionsResponse, LoadSessionResponse, NewSessionResponse, ResumeSessionResponse,
                        SessionConfigOptionSelect, SessionInfo, SessionModeState)

from . import commands, config_options, forks, modes
from .agent_api import AgentApi
from .content import McpServerConfig, mcp_config, output_text
from .errors import invalid, unknown_session
from .turns import SessionState
from .updates import recorded_files, replay

if TYPE_CHECKING:
    from sessiondag_client import Call
    from sessiondag_client.wire import protocol as wp

Servers = Sequence[McpServerConfig] | None   # the client's MCP servers (session/new, load, resume, fork)


class Setup(TypedDict):
    """What new/load/resume/fork answer besides the id."""
    modes: SessionModeState
    config_options: list[SessionConfigOptionSelect]


def check_cwd(cwd: object) -> str:
    if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd:
        raise invalid("cwd must be an absolute path", field="cwd", cwd=cwd)
    return os.path.normpath(cwd)


async def _open(agent: AgentApi, acp_id: str, cwd: str, fork: forks.Fork | None = None) -> SessionState:
    st: SessionState | None = agent.sessions.get(acp_id)
    if st is None or st.cwd != cwd:
        st = agent.sessions[acp_id] = SessionState.create(acp_id, cwd, agent.context_window, fork)
        usage: wp.SessionUsageResult = await agent.call("session/usage", {"session_id": st.sid, "by": "model"})
        st.view.seed_cost(usage["total"])
    elif fork is not None:
        st.fork = fork
    await agent.call("session/subscribe", {"session_id": st.sid})
    agent.pump.outbox.put_nowait((st, commands.update()))   # the slash commands, once the session is known
    return st


async def setup(agent: AgentApi, st: SessionState) -> Setup:
    """What new/load/resume/fork answer besides the id: the modes and the config options."""
    return {"modes": modes.state(st.mode), "config_options": await config_options.options(agent, st)}


async def new(agent: AgentApi, cwd: str, mcp_servers: Servers) -> NewSessionResponse:
    cwd = check_cwd(cwd)
    if not os.path.isdir(cwd):
        raise invalid("cwd is not a directory", field="cwd", cwd=cwd)
    # the client's MCP servers join the session's (settings, .sessiondag/mcp.json) and start now:
    # one that does not come up is this request's error (mcp_server_failed)
    h: wp.SessionHandle = await agent.call("session/open", {"working_dir": cwd, "mcp_servers": mcp_config(mcp_servers)})
    st = await _open(agent, h["session_id"], cwd)
    return NewSessionResponse(session_id=h["session_id"], **await setup(agent, st),
                              field_meta={"sessiondag": {"headId": h["head_id"]}})


async def resume(agent: AgentApi, acp_id: str, cwd: str, mcp_servers: Servers) -> SessionState:
    cwd = check_cwd(cwd)
    parsed = forks.parse(acp_id)
    sid = parsed[0] if parsed else acp_id
    await agent.call("session/resume", {"session_id": sid, "working_dir": cwd, "mcp_servers": mcp_config(mcp_servers)})
    return await _open(agent, acp_id, cwd, await forks.resolve(agent, acp_id) if parsed else None)


async def load(agent: AgentApi, acp_id: str, cwd: str, mcp_servers: Servers) -> LoadSessionResponse:
    st = await resume(agent, acp_id, cwd, mcp_servers)
    d = await agent.daemon()
    nodes = await d.get_branch(st.sid, st.tip())
    subs = {}
    for n in nodes:   # sub-agents: their spawn branches, to replay their own tool calls
        att = n.metadata.get("attached") if n.name == "spawn_agent" else None
        if isinstance(att, dict) and att.get("head_id"):
            subs[n.id] = await d.get_branch(st.sid, att["head_id"])
    images = await _images(agent, st.sid, nodes)
    writes = [n.id for n in [*nodes, *(x for b in subs.values() for x in b)]
              if n.role == "code" and recorded_files({"name": n.name, "metadata": n.metadata})]
    diffs = await agent.pump.tool_diffs(st, writes)
    for u in replay(nodes, st.cwd, subs, agent.context_window, images, diffs):
        await agent.conn.session_update(session_id=acp_id, update=u)
    return LoadSessionResponse(**await setup(agent, st),
                               field_meta={"sessiondag": {"headId": nodes[-1].id if nodes else "ROOT",
                                                          "replayed": len(nodes)}})


async def _images(agent: AgentApi, sid: str, nodes: list[Call]) -> dict[str, list[ImageContentBlock]]:
    """The images users sent on this branch, as ACP image blocks (session/get_attachment)."""
    out: dict[str, list[ImageContentBlock]] = {}
    for n in nodes:
        if n.role != "user" or n.caller != "ROOT" or not isinstance(n.output, list):
            continue
        for i, part in enumerate(n.output):
            if isinstance(part, dict) and part.get("type") == "image":
                a: wp.SessionGetAttachmentResult = await agent.call(
                    "session/get_attachment", {"session_id": sid, "node_id": n.id, "index": i})
                out.setdefault(n.id, []).append(ImageContentBlock(type="image", data=a["data"],
                                                                  mime_type=a["media_type"] or "image/png"))
    return out


async def resume_response(agent: AgentApi, acp_id: str, cwd: str, mcp_servers: Servers) -> ResumeSessionResponse:
    st = await resume(agent, acp_id, cwd, mcp_servers)
    return ResumeSessionResponse(**await setup(agent, st))


async def fork(agent: AgentApi, acp_id: str, cwd: str, mcp_servers: Servers) -> ForkSessionResponse:
    """A new ACP session on a new branch that starts at `acp_id`'s tip (forks.py)."""
    source = agent.sessions.get(acp_id)
    if source is None or source.cwd != check_cwd(cwd):
        source = await resume(agent, acp_id, cwd, mcp_servers)
    f = forks.new(source.sid, await forks.tip_of(agent, source))
    st = await _open(agent, f.acp_id, source.cwd, f)
    st.mode, st.model_choice = source.mode, source.model_choice
    return ForkSessionResponse(session_id=f.acp_id, **await setup(agent, st),
                               field_meta={"sessiondag": {"headId": f.point, "branchName": f.name,
                                                          "forkedFrom": acp_id}})


async def list_page(agent: AgentApi, cwd: str | None, cursor: str | None) -> ListSessionsResponse:
    params = {"working_dir": check_cwd(cwd)} if cwd is not None else {}
    listed: wp.SessionListResult = await agent.call("session/list", params)
    rows = [s for s in listed["sessions"] if s.get("readable")]
    rows.sort(key=lambda s: (-(s.get("updated_at") or s.get("created_at") or 0), s["session_id"]))
    try:
        start = int(cursor or 0)
        if start < 0:
            raise ValueError
    except ValueError:
        raise invalid("cursor is not one this agent returned", field="cursor") from None
    infos = []
    for s in rows[start:start + agent.page_size]:
        ts = s.get("updated_at") or s.get("created_at")   # the last activity
        infos.append(SessionInfo(session_id=s["session_id"], cwd=s.get("working_dir") or "/",
                                 title=await _title(agent, s["session_id"]),
                                 updated_at=datetime.fromtimestamp(ts, timezone.utc).isoformat() if ts else None))
    nxt = start + agent.page_size
    return ListSessionsResponse(sessions=infos, next_cursor=str(nxt) if nxt < len(rows) else None)


async def _title(agent: AgentApi, sid: str) -> str | None:
    try:
        items = await (await agent.daemon()).get_branch(sid)
    except Exception:  # noqa: BLE001
        return None
    first = next((c for c in items if c.role == "user" and c.caller == "ROOT"), None)
    return " ".join(output_text(first.output).split())[:80] or None if first else None


async def close(agent: AgentApi, acp_id: str) -> CloseSessionResponse:
    st = agent.sessions.pop(acp_id, None)
    if st is None:
        raise unknown_session(acp_id)
    if st.turn is not None:   # its prompt answers `cancelled` once the daemon's turn has ended
        agent.closing[acp_id] = st
        st.turn.cancelled = True
        st.turn.bump()
    if not any(o.turn is not None for o in agent.sessions.values() if o.sid == st.sid):   # not a sibling's turn
        await agent.call("agent/cancel", {"session_id": st.sid})
    if not any(o.sid == st.sid for o in agent.sessions.values()):   # a fork and its session share one
        await agent.call("session/unsubscribe", {"session_id": st.sid})
    return CloseSessionResponse()


async def delete(agent: AgentApi, acp_id: str) -> DeleteSessionResponse:
    """session/delete: the session is gone for good (the daemon's session/reset: its directory,
    its MCP servers); every fork of it too. Open here: closed first. A fork: its branch loses its
    name and the fork is forgotten (its nodes stay, a branch of the session). What does not exist
    (never did, or was deleted): -32002."""
    parsed = forks.parse(acp_id)
    if parsed is not None:
        f = agent.sessions[acp_id].fork if acp_id in agent.sessions else await forks.resolve(agent, acp_id)
        assert f is not None   # a fork's ACP id: its SessionState holds its Fork (_open)
        named = f.tip != f.point or acp_id in agent.sessions
        if acp_id in agent.sessions:
            await close(agent, acp_id)
        if not named:
            raise unknown_session(acp_id)
        if f.tip != f.point:
            await agent.call("session/name_branch", {"session_id": f.sid, "head_id": f.tip, "name": None})
        return DeleteSessionResponse()
    for other in [k for k, st in agent.sessions.items() if st.sid == acp_id]:
        await close(agent, other)
    r: wp.SessionResetResult = await agent.call("session/reset", {"session_id": acp_id})
    if not r.get("reset"):
        raise unknown_session(acp_id)
    return DeleteSessionResponse()
