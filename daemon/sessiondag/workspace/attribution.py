"""Which turn a file change in a session's working dir belongs to: `metadata.workspace_changes`.

A change seen while a turn is open (nodes appended since the last commit, opened by a ROOT-level user
node) is merged into that user node's metadata at once. A change seen between turns is held per
session and attached to the user node that opens the next turn (`on_appended`). Held changes keep
the session loaded (the daemon's evictor asks `holds`).

The sessions are the store's `Session` objects, reached through the daemon's callables: `lookup(sid)`
(the loaded session or None), `run_session(s, fn)` (fn in a worker thread under the session lock) and
`spawn(coro)` (a task on the daemon's loop).
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable, Coroutine, Generic, Mapping, Protocol, TypeVar

from ..core.graph import Graph
from ..core.model import ROOT
from .changes import merge

log = logging.getLogger("sessiondag.workspace")
KEY = "workspace_changes"


class TurnSession(Protocol):
    """What this module uses of a store `Session` (workspace/ sits beside store/, not above it)."""

    @property
    def open_turn(self) -> bool: ...

    @property
    def graph(self) -> Graph: ...

    @property
    def turn_node_ids(self) -> tuple[str, ...]: ...

    def update(self, node_id: str, *, metadata: dict[str, object]) -> object: ...


S = TypeVar("S", bound=TurnSession)


def opens_turn(role: object, caller: object, predecessor: object) -> bool:
    """A ROOT-level user node with a predecessor: the node that opens a turn."""
    return role == "user" and caller == ROOT and bool(predecessor)


def open_turn_node(s: TurnSession) -> str | None:
    """The user node that opened the session's current (uncommitted) turn, if any. Under the lock."""
    if not s.open_turn:
        return None
    g = s.graph
    for nid in reversed(s.turn_node_ids):
        c = g.nodes.get(nid)
        if c is not None and opens_turn(c.role, c.caller, c.predecessor):
            return nid
    return None


class ChangeAttribution(Generic[S]):
    def __init__(self, lookup: Callable[[str], S | None], run_session: Callable[[S, Callable[[], None]], Awaitable[None]],
                 spawn: Callable[[Coroutine[object, None, None]], object]):
        self.lookup, self.run_session, self.spawn = lookup, run_session, spawn
        self.pending: dict[str, list[dict[str, str]]] = {}   # session id -> changes held for its next turn

    def holds(self, sid: str) -> bool:
        return bool(self.pending.get(sid))

    def forget(self, sid: str) -> None:
        self.pending.pop(sid, None)

    async def on_changes(self, sid: str, items: list[tuple[str, str]]) -> None:
        """File changes (relpath, kind) in the session's working dir (workspace/binding.py)."""
        s = self.lookup(sid)
        if s is None:
            return

        def work() -> None:
            nid = open_turn_node(s)
            if nid is None:
                self.pending[sid] = merge(self.pending.get(sid, []), items)
                return
            cur = s.graph.nodes[nid].metadata.get(KEY) or []
            s.update(nid, metadata={KEY: merge(cur, items)})
        await self.run_session(s, work)

    def on_appended(self, sid: str, nodes: list[Mapping[str, object]]) -> None:
        """Nodes were appended (one batch, on the loop): if one opens a turn (the last such), the
        held changes are attached to it."""
        if not self.pending.get(sid):
            return
        opener: object = None
        for n in nodes:
            if opens_turn(n.get("role"), n.get("caller"), n.get("predecessor")):
                opener = n["id"]
        if isinstance(opener, str):   # a node's id (the notifier's rows: the store's nodes)
            self.spawn(self._attach_pending(sid, opener))

    async def _attach_pending(self, sid: str, node_id: str) -> None:
        s = self.lookup(sid)
        if s is None:
            return

        def work() -> None:
            pending = self.pending.pop(sid, None)
            if not pending:
                return
            cur = s.graph.nodes[node_id].metadata.get(KEY) or []
            s.update(node_id, metadata={KEY: merge(cur, [(e["path"], e["change"]) for e in pending])})
        try:
            await self.run_session(s, work)
        except Exception:  # noqa: BLE001
            log.exception("attaching workspace changes to %s/%s failed", sid, node_id)
