"""The SessiondagAgent as the modules below it use it (sessions.py, commands.py, extensions.py,
daemon_requests.py, terminals.py, routing.py …): they take it first, typed by `AgentApi`, since
agent.py imports them and naming its class would be an import cycle (tests/layer_rules.py). mypy
checks agent.py's class against it wherever the agent is passed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from acp.interfaces import Client
from acp.schema import ClientCapabilities, PromptResponse

from .daemon_calls import DaemonCalls
from .turns import SessionState
from .updates import SessionUpdate, ToolContent

if TYPE_CHECKING:
    from sessiondag_client import AsyncClient

    from .content import DaemonContent

# what the outbox holds, sent in order by one task (routing.py): an update for a session, or a
# callable run in its place (its coroutine, if it gives one, awaited)
OutboxItem = tuple[SessionState, SessionUpdate | Callable[[], object]]


class PumpApi(Protocol):
    """routing.Pump: the updates' outbox and the writes' diffs."""

    @property
    def outbox(self) -> asyncio.Queue[OutboxItem]: ...

    async def tool_diffs(self, st: SessionState, node_ids: list[str]) -> dict[str, list[ToolContent]]: ...


class AgentApi(DaemonCalls, Protocol):
    sessions: dict[str, SessionState]     # by ACP id (a fork's too)
    closing: dict[str, SessionState]      # closed while a prompt still winds down

    @property
    def conn(self) -> Client: ...         # the ACP client

    @property
    def client_caps(self) -> ClientCapabilities | None: ...

    @property
    def pump(self) -> PumpApi: ...

    @property
    def context_window(self) -> int: ...

    @property
    def page_size(self) -> int: ...

    async def daemon(self) -> AsyncClient: ...

    def states_of(self, sid: object) -> list[SessionState]: ...

    def state_for(self, sid: object) -> SessionState | None: ...

    async def run_turn(self, st: SessionState, content: DaemonContent,
                       branch_from: str | None = None) -> PromptResponse: ...
