"""The ACP agent: ACP requests become calls on the sessiondag daemon (see docs/acp.md).

One daemon connection per ACP process (auto-started when none runs). Its notifications are pumped
in order into the per-session translators, which forward them as `session/update` (routing.py); the
daemon's requests made while a turn runs (permissions, client fs, ask_user) are answered by asking
the ACP client (daemon_requests.py). Session lifecycle: sessions.py (a fork is a branch: forks.py);
modes, config options and slash commands: modes.py, config_options.py, commands.py. This module
holds the connection, initialize and the prompt turn."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (AgentCapabilities, ClientCapabilities, CloseSessionResponse, CurrentModeUpdate,
                        DeleteSessionResponse,
                        ForkSessionResponse, Implementation, InitializeResponse, ListSessionsResponse,
                        LoadSessionResponse, McpCapabilities, NewSessionResponse, PromptCapabilities, PromptResponse,
                        ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
                        SessionDeleteCapabilities, SessionForkCapabilities, SessionListCapabilities,
                        SessionResumeCapabilities, SetSessionConfigOptionResponse, SetSessionModeResponse, Usage)

from . import commands, config_options, daemon_requests, forks, modes, sessions, terminals
from .content import McpServerConfig, PromptBlock, prompt_to_content
from .errors import invalid, to_acp, unknown_session
from .routing import Pump
from .turns import SessionState, Turn

if TYPE_CHECKING:
    from sessiondag_client import AsyncClient
    from sessiondag_client.wire import protocol as wp

    from .content import DaemonContent

log = logging.getLogger("sessiondag.acp")
EXTENSIONS = ["sessiondag/list_branches", "sessiondag/checkout", "sessiondag/fork", "sessiondag/graph",
              "sessiondag/restore", "sessiondag/diff"]
STOP = {"end_turn": "end_turn", "max_steps": "max_turn_requests", "cancelled": "cancelled", "error": "end_turn"}


class SessiondagAgent:
    def __init__(self, *, state_dir: str | None = None, socket: str | None = None, auto_start: bool = True,
                 context_window: int = 128_000, page_size: int = 50):
        self.state_dir, self.socket, self.auto_start = state_dir, socket, auto_start
        self.context_window = context_window
        self.page_size = page_size
        # the ACP client (connection.py's AgentSideConnection): None only until on_connect, which the
        # connection calls as it is built, before any request reaches the agent
        self.conn: Client = None  # type: ignore[assignment]
        self.client_caps: ClientCapabilities | None = None
        self.sessions: dict[str, SessionState] = {}   # by ACP id (a fork's too: forks.py)
        self.closing: dict[str, SessionState] = {}    # closed while a prompt still winds down
        self.turn_locks: dict[str, asyncio.Lock] = {}  # per daemon session: one prompt at a time
        self.pump = Pump(self)
        self._daemon: AsyncClient | None = None
        self._daemon_lock = asyncio.Lock()
        self._pump: asyncio.Task[None] | None = None
        self._sender: asyncio.Task[None] | None = None

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    # --- the daemon ----------------------------------------------------------------------------
    async def daemon(self) -> AsyncClient:
        async with self._daemon_lock:
            d = self._daemon
            if d is None or not d.connected:
                from sessiondag_client import connect
                try:
                    d = self._daemon = await connect(self.socket, state_dir=self.state_dir,
                                                     auto_start=self.auto_start, client_name="sessiondag-acp")
                except Exception as e:  # noqa: BLE001
                    raise to_acp(e) from None
                daemon_requests.register(d, self)
                d.observer = self.pump.observe
                self._pump = asyncio.get_running_loop().create_task(self.pump.drain(d))
                if self._sender is None:
                    self._sender = asyncio.get_running_loop().create_task(self.pump.send())
                for sid in {st.sid for st in self.sessions.values()}:   # a new daemon connection: subscribe again
                    await d.subscribe(sid)
            return d

    async def call(self, method: str, params: Mapping[str, object]) -> Any:
        """One daemon call. A request that could not even be sent (the daemon went away and the
        connection is not yet seen closed) is sent once more on a new connection."""
        import anyio
        for attempt in (1, 2):
            d = await self.daemon()
            try:
                return await d.call(method, params)
            except asyncio.CancelledError:
                raise
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError,
                    ConnectionResetError) as e:
                await d.aclose()
                if attempt == 2:
                    raise to_acp(e) from None
            except Exception as e:  # noqa: BLE001
                raise to_acp(e) from None

    async def close(self) -> None:
        if self._daemon is not None:
            await self._daemon.aclose()
        for t in (self._pump, self._sender):
            if t is not None:
                t.cancel()

    def states_of(self, sid: object) -> list[SessionState]:
        """The ACP sessions (the session, its forks) on daemon session `sid`, closing ones too."""
        return [st for st in (*self.sessions.values(), *self.closing.values()) if st.sid == sid]

    def state_for(self, sid: object) -> SessionState | None:
        """The ACP session a daemon message about `sid` is for: the one whose turn (or sub-agent)
        runs, else the session itself, else a fork of it."""
        found = self.states_of(sid)
        return (next((st for st in found if st.turn is not None), None)
                or next((st for st in found if st.view.subagents_running()), None)
                or next((st for st in found if st.session_id == sid), None)
                or (found[0] if found else None))

    # --- ACP: initialize -------------------------------------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kw: object) -> InitializeResponse:
        from .. import __version__
        self.client_caps = client_capabilities
        sessions = SessionCapabilities(list=SessionListCapabilities(), resume=SessionResumeCapabilities(),
                                       close=SessionCloseCapabilities(), delete=SessionDeleteCapabilities(),
                                       fork=SessionForkCapabilities())
        caps = AgentCapabilities(
            load_session=True, session_capabilities=sessions,
            prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
            mcp_capabilities=McpCapabilities(http=True, sse=True),
            field_meta={"sessiondag": {"version": __version__, "extensions": ["_" + m for m in EXTENSIONS],
                                       "branches": True, "subagents": True, "docs": "docs/acp.md"}})
        # we speak one version: the client's when it is ours, else ours (the client then decides)
        return InitializeResponse(protocol_version=PROTOCOL_VERSION,
                                  agent_capabilities=caps, auth_methods=[],
                                  agent_info=Implementation(name="sessiondag", title="sessiondag", version=__version__))

    async def authenticate(self, method_id: str, **kw: object) -> None:
        return None

    # --- ACP: sessions (sessions.py; a fork is a branch: forks.py) ------------------------------
    async def new_session(self, cwd: str, mcp_servers: list[McpServerConfig] | None = None,
                          **kw: object) -> NewSessionResponse:
        return await sessions.new(self, cwd, mcp_servers)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[McpServerConfig] | None = None,
                           **kw: object) -> LoadSessionResponse:
        return await sessions.load(self, session_id, cwd, mcp_servers)

    async def resume_session(self, cwd: str, session_id: str, mcp_servers: list[McpServerConfig] | None = None,
                             **kw: object) -> ResumeSessionResponse:
        return await sessions.resume_response(self, session_id, cwd, mcp_servers)

    async def fork_session(self, cwd: str, session_id: str, mcp_servers: list[McpServerConfig] | None = None,
                           **kw: object) -> ForkSessionResponse:
        return await sessions.fork(self, session_id, cwd, mcp_servers)

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kw: object) -> ListSessionsResponse:
        return await sessions.list_page(self, cwd, cursor)

    async def close_session(self, session_id: str, **kw: object) -> CloseSessionResponse:
        return await sessions.close(self, session_id)

    async def delete_session(self, session_id: str, **kw: object) -> DeleteSessionResponse:
        return await sessions.delete(self, session_id)

    # --- ACP: modes and config options ---------------------------------------------------------------
    async def set_session_mode(self, mode_id: str, session_id: str, **kw: object) -> SetSessionModeResponse:
        st = self._state(session_id)
        if mode_id not in modes.MODES:
            raise invalid(f"no mode {mode_id!r} (one of {', '.join(modes.MODES)})", field="modeId")
        st.mode = mode_id
        await self.conn.session_update(session_id=session_id, update=CurrentModeUpdate(
            session_update="current_mode_update", current_mode_id=mode_id))
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kw: object) -> SetSessionConfigOptionResponse:
        st = self._state(session_id)
        await config_options.choose(self, st, config_id, value)
        return SetSessionConfigOptionResponse(config_options=await config_options.options(self, st))

    def _state(self, session_id: str) -> SessionState:
        st = self.sessions.get(session_id)
        if st is None:
            raise unknown_session(session_id)
        return st

    # --- ACP: prompt / cancel ----------------------------------------------------------------------
    async def prompt(self, prompt: list[PromptBlock], session_id: str, **kw: object) -> PromptResponse:
        st = self._state(session_id)
        cmd = commands.parse(prompt)
        if cmd is not None:   # a slash command (commands.py)
            return await commands.run(self, st, *cmd)
        return await self.run_turn(st, prompt_to_content(prompt))

    async def run_turn(self, st: SessionState, content: DaemonContent,
                       branch_from: str | None = None) -> PromptResponse:
        async with st.lock, self.turn_locks.setdefault(st.sid, asyncio.Lock()):
            head_before = await forks.before_turn(self, st)
            branch_from = branch_from or st.tip()   # a fork continues its own tip
            st.turn = turn = Turn()
            fs = getattr(self.client_caps, "fs", None)
            offers: tuple[tuple[Literal["read", "write"], object], ...] = (
                ("read", fs and fs.read_text_file), ("write", fs and fs.write_text_file))
            ops = [op for op, ok in offers if ok]
            params: wp.AgentPromptParams = {"session_id": st.sid, "content": content, "plan_tool": True}
            if ops:
                params["client_fs"] = ops
            if terminals.offered(self):   # run_command in the client's terminal (terminals.py)
                params["client_terminal"] = True
            if branch_from:
                params["branch_from"] = branch_from
            try:
                res: wp.AgentPromptResult = await self.call("agent/prompt", params)
                uid = res.get("user_node_id")
                if uid:   # every update of the turn is forwarded before the answer
                    try:
                        await asyncio.wait_for(turn.wait_until(lambda: uid in turn.finished,
                                                               until_cancelled=False), 30)
                    except asyncio.TimeoutError:   # answer anyway: the turn is over on the daemon
                        log.warning("acp: turn_finished of %s not seen within 30 s", uid)
                await turn.wait_until(lambda: turn.pending_subagents == 0)
            finally:
                st.turn = None
                if self.closing.get(st.session_id) is st:
                    del self.closing[st.session_id]
            await forks.after_turn(self, st, head_before, res.get("head_id"))
            stop = "cancelled" if turn.cancelled else STOP.get(res["stop_reason"], "end_turn")
            err = res.get("error")
            if err and not turn.cancelled:
                from acp import update_agent_message_text
                await self.conn.session_update(session_id=st.session_id, update=update_agent_message_text(
                    f"\n\nerror: {err.get('type')}: {err.get('message')}"))
            u: wp.AgentPromptResultUsage | dict[str, int] = res.get("usage") or {}
            i, o = int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0)
            return PromptResponse(stop_reason=stop, usage=Usage(input_tokens=i, output_tokens=o, total_tokens=i + o),
                                  field_meta={"sessiondag": {"stopReason": res["stop_reason"], "headId": res["head_id"],
                                                             "userNodeId": res.get("user_node_id"),
                                                             "error": res.get("error")}})

    async def cancel(self, session_id: str, **kw: object) -> None:
        st = self.sessions.get(session_id)
        if st is None:
            return
        if st.turn is not None:
            st.turn.cancelled = True
        try:
            await self.call("agent/cancel", {"session_id": st.sid})
        except RequestError as e:
            log.warning("acp: cancel failed: %s", e)
        if st.turn is not None:
            st.turn.bump()

    # --- extensions ------------------------------------------------------------------------------
    async def ext_method(self, method: str, params: Mapping[str, object]) -> dict[str, object]:
        from .extensions import handle
        return await handle(self, method, params)

    async def ext_notification(self, method: str, params: Mapping[str, object]) -> None:
        return None


async def serve(agent: SessiondagAgent) -> None:
    from .connection import SessiondagConnection
    from .transport import stdio_transport
    transport = await stdio_transport()
    conn = SessiondagConnection(agent, transport)
    print(f"sessiondag: acp ready pid={os.getpid()}", file=sys.stderr, flush=True)
    try:
        await conn.listen()
    finally:
        await agent.close()
        await asyncio.shield(conn.close())
