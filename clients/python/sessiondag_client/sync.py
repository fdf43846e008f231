"""A small blocking wrapper: the async client on a background event loop thread.

    with SyncClient.connect(state_dir=..., auto_start=True) as c:
        h = c.open(working_dir="/repo")
"""

from __future__ import annotations

from typing import Any

from anyio.from_thread import start_blocking_portal

from . import connecting as _client
from .client import AsyncClient


class SyncClient:
    def __init__(self, portal_cm: Any, portal: Any, inner: AsyncClient):
        self._portal_cm = portal_cm
        self._portal = portal
        self.inner = inner

    @classmethod
    def connect(cls, *args: Any, backend: str = "asyncio", **kw: Any) -> "SyncClient":
        """`connect(*args, **kw)` on an event loop thread of its own running anyio's `backend`
        ("asyncio" or "trio")."""
        cm = start_blocking_portal(backend)
        portal = cm.__enter__()
        try:
            inner = portal.call(lambda: _client.connect(*args, **kw))
        except BaseException:
            cm.__exit__(None, None, None)
            raise
        return cls(cm, portal, inner)

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.inner, name)
        if not callable(fn) or name in ("notifications",):
            return fn

        def call(*args: Any, **kw: Any) -> Any:
            return self._portal.call(lambda: fn(*args, **kw))
        return call

    def close(self) -> None:
        try:
            self._portal.call(self.inner.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
