"""One derived object per live store Session (the render cache, the usage ledger): built from the
session's graph on first use, fed the session's change events as a listener, built again when the
graph reloads (or when the object says it is `stale`), forgotten with the Session (weak keys)."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class PerSession(Generic[T]):
    def __init__(self, build: Callable[[Any], T]):
        self._build = build                 # graph -> object with .graph and .on_events(session, events)
        self._objs: "weakref.WeakKeyDictionary[Any, T]" = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    @staticmethod
    def _current(obj: Any, graph: Any) -> bool:
        return obj is not None and obj.graph is graph and not getattr(obj, "stale", False)

    def get(self, session: Any) -> T:
        g = session.graph
        obj = self._objs.get(session)
        if self._current(obj, g):
            return obj
        with self._lock:
            obj = self._objs.get(session)
            if self._current(obj, g):
                return obj
            if obj is not None:
                session.remove_listener(obj.on_events)
            obj = self._build(g)
            session.add_listener(obj.on_events)
            self._objs[session] = obj
        return obj

    def peek(self, session: Any) -> T | None:
        """The object of `session` if one is built and current; never builds one."""
        obj = self._objs.get(session)
        return obj if self._current(obj, session.graph) else None

    def drop(self, session: Any) -> None:
        """Forget the object of `session` (the next `get` builds a new one, cold)."""
        with self._lock:
            obj = self._objs.pop(session, None)
            if obj is not None:
                session.remove_listener(obj.on_events)

    def __len__(self) -> int:
        return len(self._objs)
