"""ClientChannel: what the daemon's parts and the handlers see of the connection a request came in on
(implemented by rpc/connection.py's Connection)."""

from __future__ import annotations

from collections.abc import Mapping, Sized
from typing import Protocol


class ClientChannel(Protocol):
    """The connection a request came in on."""

    id: str
    subscriptions: set[str]

    async def notify(self, method: str, params: dict[str, object]) -> None: ...

    def send(self, msg: dict[str, object]) -> None:
        """Queue one message without waiting (streamed updates, fan-out)."""

    async def request(self, method: str, params: dict[str, object]) -> object:
        """A server→client request (agent/ask_user, agent/request_permission); returns its result: the
        client's JSON, unchecked (the caller narrows it)."""

    def in_flight(self) -> int:
        """This client's requests running now (the write queue runs a lone write on the loop)."""


class Backlog(Protocol):
    def backlog(self) -> int:
        """Bytes queued for the client and not yet written."""


class Drains(Protocol):
    async def drain(self) -> None:
        """Return once the transport's buffer is below its low-water mark."""


class DaemonClient(ClientChannel, Protocol):
    """A client as the daemon keeps it (rpc/connection.py's Connection): what daemon/status shows of it,
    its unwritten bytes and its writer (the notifier's budget and catch-up of a slow reader) and its
    close at shutdown."""

    transport: str
    closed: bool

    @property
    def client_info(self) -> Mapping[str, object]: ...

    @property
    def tasks(self) -> Sized: ...

    @property
    def outbox(self) -> Backlog: ...

    @property
    def writer(self) -> Drains: ...

    async def wait_idle(self) -> None:
        """Wait for every in-flight request of this client to finish."""

    async def close(self, grace: float = 30.0) -> None:
        """Close the client; a big frame still being written gets `grace` seconds, then is cut."""
