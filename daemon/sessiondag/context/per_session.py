"""One derived object per live store Session (the render cache, the usage ledger): built from the
session's graph on first use, fed the session's change events as a listener, built again when the
graph reloads (or when the object says it is `stale`), forgotten with the Session (weak keys)."""

from __future__ import annotations

import threading
import weakref
from typing import Callable, Generic, Protocol, TypeGuard, TypeVar

from ..core.graph import Graph
from ..store.events import Event
from ..store.session import Session


class Derived(Protocol):
    """What a per-session object is: built from a graph, kept up by the session's events."""

    @property
    def graph(self) -> Graph: ...

    def on_events(self, session: Session, events: list[Event]) -> None: ...


T = TypeVar("T", bound=Derived)
D = TypeVar("D", bound=Derived)


class PerSession(Generic[T]):
    def __init__(self, build: Callable[[Graph], T]):
        self._build = build                 # graph -> object with .graph and .on_events(session, events)
        self._objs: weakref.WeakKeyDictionary[Session, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    @staticmethod
    def _current(obj: D | None, graph: Graph) -> TypeGuard[D]:
        return obj is not None and obj.graph is graph and not getattr(obj, "stale", False)

    def get(self, session: Session) -> T:
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

    def peek(self, session: Session) -> T | None:
        """The object of `session` if one is built and current; never builds one."""
        obj = self._objs.get(session)
        return obj if self._current(obj, session.graph) else None

    def drop(self, session: Session) -> None:
        """Forget the object of `session` (the next `get` builds a new one, cold)."""
        with self._lock:
            obj = self._objs.pop(session, None)
            if obj is not None:
                session.remove_listener(obj.on_events)

    def __len__(self) -> int:
        return len(self._objs)
