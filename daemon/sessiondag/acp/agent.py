"""The ACP agent: ACP requests become calls on the sessiondag daemon (see docs/acp.md).

One daemon connection per ACP process (auto-started when none runs). Its notifications are pumped
in order into the per-session translators, which forward them as `session/update`; the daemon's
requests made while a turn runs (permissions, client fs, ask_user) are answered by asking the ACP
client (daemon_requests.py)."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
from datetime import datetime, timezone
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (AgentCapabilities, CloseSessionResponse, CurrentModeUpdate, DeleteSessionResponse,
                        Implementation, InitializeResponse, ListSessionsResponse, LoadSessionResponse,
                        McpCapabilities, NewSessionResponse, PromptCapabilities, PromptResponse,
                        ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
                        SessionDeleteCapabilities, SessionInfo, SessionListCapabilities, SessionResumeCapabilities,
                        SetSessionConfigOptionResponse, SetSessionModeResponse, Usage)

from . import commands, config_options, daemon_requests, modes
from .content import mcp_config, output_text, prompt_to_content
from .errors import invalid, to_acp, unknown_session
from .turns import SessionState, Turn
from .updates import blob_diffs, recorded_files, replay, text_content

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
        self.conn: Any = None                 # the ACP client (AgentSideConnection)
        self.client_caps: Any = None
        self.sessions: dict[str, SessionState] = {}
        self._closing: dict[str, SessionState] = {}   # closed while a prompt still winds down
        self._daemon: Any = None
        self._daemon_lock = asyncio.Lock()
        self._pump: asyncio.Task | None = None
        self._sender: asyncio.Task | None = None
        self._outbox: asyncio.Queue = asyncio.Queue()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # --- the daemon ----------------------------------------------------------------------------
    async def daemon(self) -> Any:
        async with self._daemon_lock:
            if self._daemon is None or not self._daemon.connected:
                from sessiondag_client import connect
                try:
                    self._daemon = await connect(self.socket, state_dir=self.state_dir,
                                                 auto_start=self.auto_start, client_name="sessiondag-acp")
                except Exception as e:  # noqa: BLE001
                    raise to_acp(e) from None
                d = self._daemon
                for method, handler in daemon_requests.HANDLERS.items():
                    d.on_request(method, functools.partial(handler, self))
                d.observer = self._observe
                self._pump = asyncio.get_running_loop().create_task(self._drain(d))
                if self._sender is None:
                    self._sender = asyncio.get_running_loop().create_task(self._send_updates())
                for sid in self.sessions:   # a new daemon connection: subscribe again
                    await d.subscribe(sid)
            return self._daemon

    async def call(self, method: str, params: dict[str, Any]) -> Any:
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

    @staticmethod
    async def _drain(d: Any) -> None:
        async for _ in d.notifications():   # everything is handled by _observe, in reader order
            pass

    def _observe(self, method: str, msg: dict[str, Any]) -> None:
        """Called by the daemon client's reader for every message, in order, before it starts
        answering any later daemon request: the translators are always up to date when a
        permission request arrives. What goes to the ACP client is queued for `_send_updates`."""
        if "method" not in msg:
            return
        try:
            self._route(method, msg.get("params") or {})
        except Exception:  # noqa: BLE001 - one bad update must not stop the stream
            log.exception("acp: could not translate %s", method)

    def _route(self, method: str, p: dict[str, Any]) -> None:
        st = self.sessions.get(p.get("session_id")) or self._closing.get(p.get("session_id"))
        if st is None:
            return
        updates: list[Any] = []
        if method == "session/did_delete":   # deleted (by any client): gone here too, never opened again
            self.sessions.pop(st.session_id, None)
            if st.turn is not None:
                st.turn.cancelled = True
                st.turn.bump()
            return
        if method == "agent/did_update":
            if st.turn is None and not st.view.subagents_running():
                return  # another client's turn (the daemon fans it out to subscribers): did_change shows it
            kind = p.get("kind")
            if kind == "turn_finished":
                self._outbox.put_nowait((st, lambda st=st, r=p.get("result") or {}: st.on_turn_finished(r)))
                return
            updates = st.view.on_event(kind, p)
            node = p.get("node") or {}
            if kind == "node_updated" and updates and recorded_files(node):   # its diff from the blobs
                self._outbox.put_nowait((st, functools.partial(self._send_with_diff, st, updates[0])))
                return
            if (kind == "node_updated" and node.get("name") == "spawn_agent" and node.get("status") == "completed"
                    and node.get("id") in st.view.spawn_calls and st.turn is not None):
                st.turn.pending_subagents += 1
        elif method == "session/did_change":
            # other clients' turns (a CLI run, an editor plugin) show up live too; our own turns
            # and sub-agents are streamed through agent/did_update instead
            others = st.turn is None and not st.view.subagents_running()
            for ch in p.get("changes") or ():
                att = ((ch.get("fields") or {}).get("metadata") or {}).get("attached") if ch.get("kind") == "update" else None
                if att and ch.get("node_id") in st.view.spawn_calls:
                    updates += st.view.attached(ch.get("node_id"), att)
                elif others:
                    updates += st.view.on_change(ch)
        for u in updates:
            self._outbox.put_nowait((st, u))

    async def _send_updates(self) -> None:
        while True:
            st, item = await self._outbox.get()
            try:
                if callable(item):
                    done = item()
                    if asyncio.iscoroutine(done):
                        await done
                else:
                    await self.conn.session_update(session_id=st.session_id, update=item)
            except Exception:  # noqa: BLE001
                log.exception("acp: could not send a session/update")
            finally:
                self._outbox.task_done()

    async def tool_diffs(self, st: SessionState, node_ids: list[str]) -> dict[str, list[Any]]:
        """Writes' diffs from the blobs their nodes recorded (session/tool_diff), node id -> contents."""
        out = {}
        for nid in node_ids:
            try:
                out[nid] = blob_diffs(st.cwd, await self.call("session/tool_diff",
                                                              {"session_id": st.session_id, "node_id": nid}))
            except RequestError as e:   # the update goes out with the diff it had
                log.warning("acp: no diff for %s: %s", nid, e)
        return out

    async def _send_with_diff(self, st: SessionState, update: Any) -> None:
        got = await self.tool_diffs(st, [update.tool_call_id])
        if update.tool_call_id in got:   # the recorded blobs decide (no diff for a binary file)
            update.content = got[update.tool_call_id] or text_content((update.raw_output or {}).get("output"))
        await self.conn.session_update(session_id=st.session_id, update=update)

    # --- ACP: initialize -------------------------------------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kw: Any) -> InitializeResponse:
        from .. import __version__
        self.client_caps = client_capabilities
        sessions = SessionCapabilities(list=SessionListCapabilities(), resume=SessionResumeCapabilities(),
                                       close=SessionCloseCapabilities(), delete=SessionDeleteCapabilities())
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

    async def authenticate(self, method_id: str, **kw: Any) -> None:
        return None

    # --- ACP: sessions -----------------------------------------------------------------------------
    def _check_cwd(self, cwd: Any) -> str:
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or "\0" in cwd:
            raise invalid("cwd must be an absolute path", field="cwd", cwd=cwd)
        return os.path.normpath(cwd)

    async def _open(self, sid: str, cwd: str) -> SessionState:
        st = self.sessions.get(sid)
        if st is None or st.cwd != cwd:
            st = self.sessions[sid] = SessionState.create(sid, cwd, self.context_window)
            st.view.seed_cost((await self.call("session/usage", {"session_id": sid, "by": "model"}))["total"])
        await self.call("session/subscribe", {"session_id": sid})
        self._outbox.put_nowait((st, commands.update()))   # the slash commands, once the session is known
        return st

    async def _session_setup(self, st: SessionState) -> dict[str, Any]:
        """What new/load/resume answer besides the id: the modes and the config options."""
        return {"modes": modes.state(st.mode),
                "config_options": await config_options.options(self, st)}

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kw: Any) -> NewSessionResponse:
        cwd = self._check_cwd(cwd)
        if not os.path.isdir(cwd):
            raise invalid("cwd is not a directory", field="cwd", cwd=cwd)
        # the client's MCP servers join the session's (settings, .sessiondag/mcp.json) and start now:
        # one that does not come up is this request's error (mcp_server_failed)
        h = await self.call("session/open", {"working_dir": cwd, "mcp_servers": mcp_config(mcp_servers)})
        st = await self._open(h["session_id"], cwd)
        return NewSessionResponse(session_id=h["session_id"], **await self._session_setup(st),
                                  field_meta={"sessiondag": {"headId": h["head_id"]}})

    async def _resume(self, session_id: str, cwd: str, mcp_servers: list[Any] | None = None) -> SessionState:
        cwd = self._check_cwd(cwd)
        await self.call("session/resume", {"session_id": session_id, "working_dir": cwd,
                                           "mcp_servers": mcp_config(mcp_servers)})
        return await self._open(session_id, cwd)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kw: Any) -> LoadSessionResponse:
        st = await self._resume(session_id, cwd, mcp_servers)
        d = await self.daemon()
        nodes = await d.get_branch(session_id)
        subs = {}
        for n in nodes:   # sub-agents: their spawn branches, to replay their own tool calls
            att = n.metadata.get("attached") if n.name == "spawn_agent" else None
            if isinstance(att, dict) and att.get("head_id"):
                subs[n.id] = await d.get_branch(session_id, att["head_id"])
        images = await self._images(session_id, nodes)
        writes = [n.id for n in [*nodes, *(x for b in subs.values() for x in b)]
                  if n.role == "code" and recorded_files({"name": n.name, "metadata": n.metadata})]
        diffs = await self.tool_diffs(st, writes)
        for u in replay(nodes, st.cwd, subs, self.context_window, images, diffs):
            await self.conn.session_update(session_id=session_id, update=u)
        return LoadSessionResponse(**await self._session_setup(st),
                                   field_meta={"sessiondag": {"headId": nodes[-1].id if nodes else "ROOT",
                                                              "replayed": len(nodes)}})

    async def _images(self, sid: str, nodes: list[Any]) -> dict[str, list[Any]]:
        """The images users sent on this branch, as ACP image blocks (session/get_attachment)."""
        from acp.schema import ImageContentBlock
        out: dict[str, list[Any]] = {}
        for n in nodes:
            if n.role != "user" or n.caller != "ROOT" or not isinstance(n.output, list):
                continue
            for i, part in enumerate(n.output):
                if isinstance(part, dict) and part.get("type") == "image":
                    a = await self.call("session/get_attachment", {"session_id": sid, "node_id": n.id, "index": i})
                    out.setdefault(n.id, []).append(ImageContentBlock(type="image", data=a["data"],
                                                                      mime_type=a["media_type"] or "image/png"))
        return out

    async def resume_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                             **kw: Any) -> ResumeSessionResponse:
        st = await self._resume(session_id, cwd, mcp_servers)
        return ResumeSessionResponse(**await self._session_setup(st))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kw: Any) -> ListSessionsResponse:
        params = {"working_dir": self._check_cwd(cwd)} if cwd is not None else {}
        rows = [s for s in (await self.call("session/list", params))["sessions"] if s.get("readable")]
        rows.sort(key=lambda s: (-(s.get("updated_at") or s.get("created_at") or 0), s["session_id"]))
        try:
            start = int(cursor or 0)
            if start < 0:
                raise ValueError
        except ValueError:
            raise invalid("cursor is not one this agent returned", field="cursor") from None
        page = rows[start:start + self.page_size]
        infos = []
        for s in page:
            ts = s.get("updated_at") or s.get("created_at")   # the last activity
            infos.append(SessionInfo(session_id=s["session_id"], cwd=s.get("working_dir") or "/",
                                     title=await self._title(s["session_id"]),
                                     updated_at=datetime.fromtimestamp(ts, timezone.utc).isoformat() if ts else None))
        nxt = start + self.page_size
        return ListSessionsResponse(sessions=infos, next_cursor=str(nxt) if nxt < len(rows) else None)

    async def _title(self, sid: str) -> str | None:
        try:
            items = await (await self.daemon()).get_branch(sid)
        except Exception:  # noqa: BLE001
            return None
        first = next((c for c in items if c.role == "user" and c.caller == "ROOT"), None)
        return " ".join(output_text(first.output).split())[:80] or None if first else None

    async def close_session(self, session_id: str, **kw: Any) -> CloseSessionResponse:
        st = self.sessions.pop(session_id, None)
        if st is None:
            raise unknown_session(session_id)
        if st.turn is not None:   # its prompt answers `cancelled` once the daemon's turn has ended
            self._closing[session_id] = st
            st.turn.cancelled = True
            st.turn.bump()
        await self.call("agent/cancel", {"session_id": session_id})
        await self.call("session/unsubscribe", {"session_id": session_id})
        return CloseSessionResponse()

    async def delete_session(self, session_id: str, **kw: Any) -> DeleteSessionResponse:
        """session/delete: the session is gone for good (the daemon's session/reset: its directory,
        its MCP servers). Open here: closed first. A session that does not exist: -32002."""
        if session_id in self.sessions:
            await self.close_session(session_id)
        r = await self.call("session/reset", {"session_id": session_id})
        if not r.get("reset"):
            raise unknown_session(session_id)
        return DeleteSessionResponse()

    # --- ACP: modes and config options ---------------------------------------------------------------
    async def set_session_mode(self, mode_id: str, session_id: str, **kw: Any) -> SetSessionModeResponse:
        st = self._state(session_id)
        if mode_id not in modes.MODES:
            raise invalid(f"no mode {mode_id!r} (one of {', '.join(modes.MODES)})", field="modeId")
        st.mode = mode_id
        await self.conn.session_update(session_id=session_id, update=CurrentModeUpdate(
            session_update="current_mode_update", current_mode_id=mode_id))
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: Any,
                                **kw: Any) -> SetSessionConfigOptionResponse:
        st = self._state(session_id)
        await config_options.choose(self, st, config_id, value)
        return SetSessionConfigOptionResponse(config_options=await config_options.options(self, st))

    def _state(self, session_id: str) -> SessionState:
        st = self.sessions.get(session_id)
        if st is None:
            raise unknown_session(session_id)
        return st

    # --- ACP: prompt / cancel ----------------------------------------------------------------------
    async def prompt(self, prompt: list[Any], session_id: str, **kw: Any) -> PromptResponse:
        st = self._state(session_id)
        cmd = commands.parse(prompt)
        if cmd is not None:   # a slash command (commands.py)
            return await commands.run(self, st, *cmd)
        return await self.run_turn(st, prompt_to_content(prompt))

    async def run_turn(self, st: SessionState, content: Any, branch_from: str | None = None) -> PromptResponse:
        async with st.lock:
            st.turn = turn = Turn()
            fs = getattr(self.client_caps, "fs", None)
            ops = [op for op, ok in (("read", fs and fs.read_text_file), ("write", fs and fs.write_text_file)) if ok]
            params: dict[str, Any] = {"session_id": st.session_id, "content": content}
            if ops:
                params["client_fs"] = ops
            if branch_from:
                params["branch_from"] = branch_from
            try:
                res = await self.call("agent/prompt", params)
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
                if self._closing.get(st.session_id) is st:
                    del self._closing[st.session_id]
            stop = "cancelled" if turn.cancelled else STOP.get(res["stop_reason"], "end_turn")
            if res.get("error") and not turn.cancelled:
                from acp import update_agent_message_text
                await self.conn.session_update(session_id=st.session_id, update=update_agent_message_text(
                    f"\n\nerror: {res['error'].get('type')}: {res['error'].get('message')}"))
            u = res.get("usage") or {}
            i, o = int(u.get("input_tokens") or 0), int(u.get("output_tokens") or 0)
            return PromptResponse(stop_reason=stop, usage=Usage(input_tokens=i, output_tokens=o, total_tokens=i + o),
                                  field_meta={"sessiondag": {"stopReason": res["stop_reason"], "headId": res["head_id"],
                                                             "userNodeId": res.get("user_node_id"),
                                                             "error": res.get("error")}})

    async def cancel(self, session_id: str, **kw: Any) -> None:
        st = self.sessions.get(session_id)
        if st is None:
            return
        if st.turn is not None:
            st.turn.cancelled = True
        try:
            await self.call("agent/cancel", {"session_id": session_id})
        except RequestError as e:
            log.warning("acp: cancel failed: %s", e)
        if st.turn is not None:
            st.turn.bump()

    # --- extensions ------------------------------------------------------------------------------
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from .extensions import handle
        return await handle(self, method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
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
