"""ClientChannel: what the daemon's parts and the handlers see of the connection a request came in on
(implemented by rpc/connection.py's Connection)."""

from __future__ import annotations

from typing import Any, Protocol


class ClientChannel(Protocol):
    """The connection a request came in on."""

    id: str
    subscriptions: set[str]

    async def notify(self, method: str, params: dict[str, Any]) -> None: ...

    def send(self, msg: dict[str, Any]) -> None:
        """Queue one message without waiting (streamed updates, fan-out)."""

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A server→client request (agent/ask_user, agent/request_permission); returns its result."""

    def in_flight(self) -> int:
        """This client's requests running now (the write queue runs a lone write on the loop)."""
