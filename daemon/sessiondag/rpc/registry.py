"""The method table every transport serves, and what a handler sees: `RequestContext`.

Handlers are `async def handler(ctx: RequestContext, params: dict) -> result` registered with
`@method("session/append")`. Params arrive as plain dicts (snake_case keys), already checked against
the method's schema in rpc_schema/ (rpc/params.py); results are plain JSON-able values. A handler
raises the typed errors of `core.errors` (or `InvalidParams`); the server turns them into JSON-RPC
errors with stable codes. A handler reaches the daemon only through `ctx.service` (rpc/service.py,
the typed session service; tests/rpc/test_service_boundary.py holds it) and the client it answers
through `ctx.client`. Method modules: rpc/*_methods.py; the server imports them explicitly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .channel import ClientChannel
from .invalid_params import InvalidParams
from .service import SessionService

__all__ = ["METHODS", "ClientChannel", "Handler", "InvalidParams", "RequestContext", "method"]


@dataclass
class RequestContext:
    service: SessionService
    client: ClientChannel
    request_id: Any = None     # a JSON-RPC id: an int or a string (None for a notification)


Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[Any]]
METHODS: dict[str, Handler] = {}


def method(name: str) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        if name in METHODS:
            raise RuntimeError(f"method {name!r} registered twice")
        METHODS[name] = fn
        return fn
    return deco
