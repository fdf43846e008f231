"""The daemon's notifications -> the ACP client's `session/update`s, in order.

The daemon client's reader calls `Pump.observe` for every message before it answers any later
daemon request, so the translators are up to date when a permission request arrives. Updates go
through one outbox, sent by one task: a callable in it runs in order with the updates (a turn's
end), a coroutine is awaited (a write's diff fetched from its recorded blobs first). Notifications
name the daemon's session; `SessiondagAgent.state_for` picks the ACP session (the session itself,
or the fork whose turn runs)."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from acp import RequestError
from acp.schema import ToolCallProgress

from .agent_api import AgentApi, OutboxItem
from .turns import SessionState
from .updates import SessionUpdate, ToolContent, blob_diffs, recorded_files, text_content

if TYPE_CHECKING:
    from sessiondag_client import AsyncClient

log = logging.getLogger("sessiondag.acp")


class Pump:
    def __init__(self, agent: AgentApi):
        self.agent = agent
        self.outbox: asyncio.Queue[OutboxItem] = asyncio.Queue()

    @staticmethod
    async def drain(d: AsyncClient) -> None:
        async for _ in d.notifications():   # everything is handled by observe, in reader order
            pass

    def observe(self, method: str, msg: Mapping[str, Any]) -> None:
        """The client's observer: every message the daemon sends (a response too), raw; its params
        are read with .get, defensively (a union of the wire's notification TypedDicts would
        narrow on msg["method"] only)."""
        if "method" not in msg:
            return
        try:
            self.route(method, msg.get("params") or {})
        except Exception:  # noqa: BLE001 - one bad update must not stop the stream
            log.exception("acp: could not translate %s", method)

    def route(self, method: str, p: Mapping[str, Any]) -> None:
        agent = self.agent
        sid = p.get("session_id")
        if method == "session/did_delete":   # deleted (by any client): gone here too, never opened again
            for gone in agent.states_of(sid):
                agent.sessions.pop(gone.session_id, None)
                if gone.turn is not None:
                    gone.turn.cancelled = True
                    gone.turn.bump()
            return
        st = agent.state_for(sid)
        if st is None:
            return
        updates: list[SessionUpdate] = []
        if method == "agent/did_update":
            if st.turn is None and not st.view.subagents_running():
                return  # another client's turn (the daemon fans it out to subscribers): did_change shows it
            kind = p.get("kind")
            if kind == "turn_finished":
                self.outbox.put_nowait((st, functools.partial(st.on_turn_finished, p.get("result") or {})))
                return
            updates = st.view.on_event(kind, p)
            node = p.get("node") or {}
            if (kind == "node_updated" and updates and isinstance(updates[0], ToolCallProgress)
                    and recorded_files(node)):   # its diff from the blobs (a write's tool_call_update)
                self.outbox.put_nowait((st, functools.partial(self.send_with_diff, st, updates[0])))
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
            self.outbox.put_nowait((st, u))

    async def send(self) -> None:
        while True:
            st, item = await self.outbox.get()
            try:
                if callable(item):
                    done = item()
                    if asyncio.iscoroutine(done):
                        await done
                else:
                    await self.agent.conn.session_update(session_id=st.session_id, update=item)
            except Exception:  # noqa: BLE001
                log.exception("acp: could not send a session/update")
            finally:
                self.outbox.task_done()

    async def tool_diffs(self, st: SessionState, node_ids: list[str]) -> dict[str, list[ToolContent]]:
        """Writes' diffs from the blobs their nodes recorded (session/tool_diff), node id -> contents."""
        out: dict[str, list[ToolContent]] = {}
        for nid in node_ids:
            try:
                out[nid] = blob_diffs(st.cwd, await self.agent.call("session/tool_diff",
                                                                    {"session_id": st.sid, "node_id": nid}))
            except RequestError as e:   # the update goes out with the diff it had
                log.warning("acp: no diff for %s: %s", nid, e)
        return out

    async def send_with_diff(self, st: SessionState, update: ToolCallProgress) -> None:
        got = await self.tool_diffs(st, [update.tool_call_id])
        if update.tool_call_id in got:   # the recorded blobs decide (no diff for a binary file)
            update.content = got[update.tool_call_id] or text_content((update.raw_output or {}).get("output"))
        await self.agent.conn.session_update(session_id=st.session_id, update=update)
