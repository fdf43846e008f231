"""The method table every transport serves, and the view of the daemon a handler sees.

Handlers are `async def handler(ctx: RequestContext, params: dict) -> result` registered with
`@method("session/append")`. Params arrive as plain dicts (snake_case keys), already checked against
the method's schema in rpc_schema/ (rpc/params.py); results are plain JSON-able values. A handler raises the typed errors of `core.errors` (or `InvalidParams`); the server
turns them into JSON-RPC errors with stable codes. Method modules: `rpc/session_methods.py`
(session/*, daemon/*) and `rpc/agent_methods.py` (agent/*); the server imports both explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from ..core.errors import SessionDagError


class InvalidParams(SessionDagError, ValueError):
    """Params that do not fit the method (JSON-RPC -32602); `param` names the offending one."""

    code = "invalid_params"

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param

    def data(self) -> dict[str, Any]:
        return {} if self.param is None else {"param": self.param}


class ClientChannel(Protocol):
    """The connection a request came in on."""

    id: str

    async def notify(self, method: str, params: dict[str, Any]) -> None: ...

    def send(self, msg: dict[str, Any]) -> None:
        """Queue one message without waiting (streamed updates, fan-out)."""

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """A server→client request (agent/ask_user, agent/request_permission); returns its result."""


class DaemonCore(Protocol):
    """What the daemon shares across connections (implemented in rpc/daemon.py)."""

    store: Any  # sessiondag.store.SessionStore

    async def run_blocking(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run blocking store/git work off the event loop (bounded concurrency)."""

    def session_lock(self, session_id: str) -> Any:
        """An anyio.Lock serializing writes (and agent turns) to one session."""

    def check_bound(self, session_id: str) -> None:
        """Raise WorkingDirUnboundError if the session's working dir is gone."""

    async def publish(self, session_id: str, method: str, params: dict[str, Any]) -> None:
        """Send a notification to every client subscribed to the session."""


@dataclass
class RequestContext:
    daemon: DaemonCore
    client: ClientChannel
    request_id: Any = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def store(self) -> Any:
        return self.daemon.store


Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[Any]]
METHODS: dict[str, Handler] = {}


def method(name: str) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        if name in METHODS:
            raise RuntimeError(f"method {name!r} registered twice")
        METHODS[name] = fn
        return fn
    return deco
