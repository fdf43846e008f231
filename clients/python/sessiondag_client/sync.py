"""A small blocking wrapper: the async client on a background event loop thread.

    with SyncClient.connect(state_dir=..., auto_start=True) as c:
        h = c.open(working_dir="/repo")

Each method is AsyncClient's of the same name with the same parameters and result (typed: a
caller's wrong name, parameter or use of the result is a type error), run on the client's loop.
"""

from __future__ import annotations

from collections.abc import Awaitable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Callable, Concatenate, Generic, ParamSpec, TypeVar, Unpack, overload

from anyio.from_thread import BlockingPortal, start_blocking_portal

from . import connecting as _client
from .client import AsyncClient
from .sync_overloads import BLOCKING, ON_LOOP, BlockingOverloads

P = ParamSpec("P")
R = TypeVar("R")


class _Blocking(Generic[P, R]):
    """SyncClient's method for AsyncClient's coroutine method `fn`: its parameters, its awaited
    result, run on the client's event loop thread."""

    def __init__(self, fn: Callable[Concatenate[AsyncClient, P], Awaitable[R]]) -> None:
        self.name = fn.__name__

    @overload
    def __get__(self, obj: None, owner: type[SyncClient]) -> _Blocking[P, R]: ...
    @overload
    def __get__(self, obj: SyncClient, owner: type[SyncClient]) -> Callable[P, R]: ...

    def __get__(self, obj: SyncClient | None, owner: type[SyncClient]) -> _Blocking[P, R] | Callable[P, R]:
        if obj is None:
            return self
        fn: Callable[P, Awaitable[R]] = getattr(obj.inner, self.name)
        portal = obj._portal

        def call(*args: P.args, **kw: P.kwargs) -> R:
            return portal.call(lambda: fn(*args, **kw))
        return call


class _OnLoop(Generic[P, R]):
    """SyncClient's method for AsyncClient's plain method `fn`, called on the client's loop thread."""

    def __init__(self, fn: Callable[Concatenate[AsyncClient, P], R]) -> None:
        self.name = fn.__name__

    @overload
    def __get__(self, obj: None, owner: type[SyncClient]) -> _OnLoop[P, R]: ...
    @overload
    def __get__(self, obj: SyncClient, owner: type[SyncClient]) -> Callable[P, R]: ...

    def __get__(self, obj: SyncClient | None, owner: type[SyncClient]) -> _OnLoop[P, R] | Callable[P, R]:
        if obj is None:
            return self
        fn: Callable[P, R] = getattr(obj.inner, self.name)
        portal = obj._portal

        def call(*args: P.args, **kw: P.kwargs) -> R:
            return portal.call(lambda: fn(*args, **kw))
        return call


class SyncClient(BlockingOverloads):
    """AsyncClient's methods, blocking: each coroutine method run on the client's loop, waited for; the
    overloaded ones (sync_overloads.py, generated from AsyncClient's) set below the class."""

    def __init__(self, portal_cm: AbstractContextManager[BlockingPortal], portal: BlockingPortal, inner: AsyncClient):
        self._portal_cm = portal_cm
        self._portal = portal
        self.inner = inner

    @classmethod
    def connect(cls, socket: str | None = None, *, backend: str = "asyncio",
                **kw: Unpack[_client.SyncConnectOptions]) -> "SyncClient":
        """`connect(socket, **kw)` on an event loop thread of its own running anyio's `backend`
        ("asyncio" or "trio")."""
        cm = start_blocking_portal(backend)
        portal = cm.__enter__()
        try:
            inner = portal.call(lambda: _client.connect(socket, **kw))
        except BaseException:
            cm.__exit__(None, None, None)
            raise
        return cls(cm, portal, inner)

    # AsyncClient's methods (tests/rpc/test_client_signatures.py: every one is here, typed as it is)
    open = _Blocking(AsyncClient.open)
    start = _Blocking(AsyncClient.start)
    resume = _Blocking(AsyncClient.resume)
    reset = _Blocking(AsyncClient.reset)
    append = _Blocking(AsyncClient.append)
    update = _Blocking(AsyncClient.update)
    get_node = _Blocking(AsyncClient.get_node)
    get_attachment = _Blocking(AsyncClient.get_attachment)
    get_branch = _Blocking(AsyncClient.get_branch)
    get_branch_page = _Blocking(AsyncClient.get_branch_page)
    list_branches = _Blocking(AsyncClient.list_branches)
    checkout = _Blocking(AsyncClient.checkout)
    restore = _Blocking(AsyncClient.restore)
    diff = _Blocking(AsyncClient.diff)
    tool_diff = _Blocking(AsyncClient.tool_diff)
    name_branch = _Blocking(AsyncClient.name_branch)
    spawn_branch = _Blocking(AsyncClient.spawn_branch)
    render = _Blocking(AsyncClient.render)
    usage = _Blocking(AsyncClient.usage)
    replay = _Blocking(AsyncClient.replay)
    replay_branch = _Blocking(AsyncClient.replay_branch)
    compare = _Blocking(AsyncClient.compare)
    compact = _Blocking(AsyncClient.compact)
    commit = _Blocking(AsyncClient.commit)
    push = _Blocking(AsyncClient.push)
    pull = _Blocking(AsyncClient.pull)
    remote_list = _Blocking(AsyncClient.remote_list)
    subscribe = _Blocking(AsyncClient.subscribe)
    unsubscribe = _Blocking(AsyncClient.unsubscribe)
    status = _Blocking(AsyncClient.status)
    ping = _Blocking(AsyncClient.ping)
    stop_daemon = _Blocking(AsyncClient.stop_daemon)
    shutdown = _Blocking(AsyncClient.shutdown)
    agent_prompt = _Blocking(AsyncClient.agent_prompt)
    agent_cancel = _Blocking(AsyncClient.agent_cancel)
    list = _Blocking(AsyncClient.list)
    call = _Blocking(AsyncClient.call)
    notify = _Blocking(AsyncClient.notify)
    aclose = _Blocking(AsyncClient.aclose)
    pending_notifications = _OnLoop(AsyncClient.pending_notifications)

    @property
    def connected(self) -> bool:
        return self.inner.connected

    if not TYPE_CHECKING:
        def __getattr__(self, name: str) -> object:
            """Anything else of the inner client (its attributes: `observer` …), as it is; a
            checker sees only the typed methods above."""
            return getattr(self.inner, name)

    def close(self) -> None:
        try:
            self._portal.call(self.inner.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# AsyncClient's overloaded methods at run time (their overloads: BlockingOverloads, generated)
for _name in BLOCKING:
    setattr(SyncClient, _name, _Blocking(getattr(AsyncClient, _name)))
for _name in ON_LOOP:
    setattr(SyncClient, _name, _OnLoop(getattr(AsyncClient, _name)))
