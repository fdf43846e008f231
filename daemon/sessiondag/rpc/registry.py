"""The method table every transport serves, and what a handler sees: `RequestContext`.

Handlers are `async def handler(ctx: RequestContext, p: SessionAppendParams) -> result` registered with
`@method("session/append")`. Params arrive as plain dicts (snake_case keys), already checked against
the method's schema in rpc_schema/ (rpc/params.py), typed by the method's TypedDict of
rpc/handler_types.py (generated from rpc_schema/); results are plain JSON-able values. A handler
raises the typed errors of `core.errors` (or `InvalidParams`); the server turns them into JSON-RPC
errors with stable codes. A handler reaches the daemon only through `ctx.service` (rpc/service.py,
the typed session service; tests/rpc/test_service_boundary.py holds it) and the client it answers
through `ctx.client`. Method modules: rpc/*_methods.py; the server imports them explicitly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .answer_now import LATER
from .channel import ClientChannel, DaemonClient
from .invalid_params import InvalidParams
from .service import SessionService

__all__ = ["LATER", "METHODS", "NOW", "ClientChannel", "Handler", "InvalidParams", "RequestContext", "answers_now",
           "method"]


@dataclass
class RequestContext:
    service: SessionService
    client: DaemonClient          # the connection the request came in on
    request_id: object = None     # a JSON-RPC id, an int or a string the read loop checked (None: a notification)


P = TypeVar("P")
R = TypeVar("R")

# Each handler takes its own method's params (the TypedDict of rpc/handler_types.py that rpc/params.py
# checked them against before the call): no one type says that of every entry of the table, so the
# table's params are Any; `@method` gives each handler back with its own signature.
Handler = Callable[[RequestContext, Any], Awaitable[object]]
METHODS: dict[str, Handler] = {}
MethodHandler = Callable[[RequestContext, P], Awaitable[R]]   # one method's handler, its own types


def method(name: str) -> Callable[[MethodHandler[P, R]], MethodHandler[P, R]]:
    def deco(fn: MethodHandler[P, R]) -> MethodHandler[P, R]:
        if name in METHODS:
            raise RuntimeError(f"method {name!r} registered twice")
        METHODS[name] = fn
        return fn
    return deco


# A method's synchronous form for a request that can be answered at once (rpc/answer_now.py): its
# result, an error raised, an awaitable finishing the request, or LATER (the ordinary way instead).
NowHandler = Callable[[RequestContext, Any], object]
NOW: dict[str, NowHandler] = {}
NowForm = Callable[[RequestContext, P], object]


def answers_now(name: str) -> Callable[[NowForm[P]], NowForm[P]]:
    def deco(fn: NowForm[P]) -> NowForm[P]:
        if name in NOW:
            raise RuntimeError(f"method {name!r} has two now forms")
        NOW[name] = fn
        return fn
    return deco
