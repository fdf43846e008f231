"""The ACP connection: the SDK's agent side plus the stable methods its router does not route yet.

The pinned SDK (agent-client-protocol 0.12.1) has `session/delete` in its schema and method table
but no route for it, so a client asking for it would get -32601. `SessiondagConnection` builds the
SDK's own router, adds the missing routes (`session/delete` -> `agent.delete_session`), and keeps
every client-facing method of `AgentSideConnection` (session/update, permissions, fs, terminals).
`AgentSideConnection` is marked @final for type checkers; this subclass only replaces how its
connection is built, which is why the SDK is pinned to one version."""

from __future__ import annotations

from typing import Any

from acp._transport import Transport
from acp.agent.connection import AgentSideConnection
from acp.agent.router import build_agent_router
from acp.connection import Connection
from acp.meta import AGENT_METHODS
from acp.schema import DeleteSessionRequest
from acp.utils import normalize_result


class SessiondagConnection(AgentSideConnection):  # type: ignore[misc]
    # `agent`: agent.py's SessiondagAgent, which the router calls by keyword; it is not the SDK's `Agent`
    # Protocol, whose methods list their parameters in another order (fork_session: session_id
    # first) and name additional_directories, which SessiondagAgent takes in **kw
    def __init__(self, agent: Any, transport: Transport) -> None:   # noqa: super().__init__ builds another router
        router = build_agent_router(agent, use_unstable_protocol=True)
        router.route_request(AGENT_METHODS["session_delete"], DeleteSessionRequest, agent, "delete_session",
                             adapt_result=normalize_result)
        self._conn = Connection(router, transport, listening=False)
        agent.on_connect(self)
