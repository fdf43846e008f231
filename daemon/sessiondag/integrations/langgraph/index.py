"""The LangGraph view of one session: which node holds which checkpoint, channel value and writes.

Built from the nodes' `metadata.langgraph` once, then kept current by a session listener (which
sees this process's writes and those other processes made, as the store catches up). If the store
reloaded the session from disk (a new graph object) the index is rebuilt. Read it holding the
session lock (`with session.lock:`) and call `fresh()` first.

Node kinds (metadata.langgraph.kind): "checkpoint" (one per checkpoint; `metadata.langgraph_hidden`
marks one pruned), "writes" (one per put_writes call), "anchor" (the caller of subgraph branches
whose parent checkpoint is unknown).
"""

from __future__ import annotations

from typing import Any

from ...store import Session
from ...store.events import Event, NodeAppended, NodeUpdated

HIDDEN = "langgraph_hidden"
PREFIX = "lg-"                          # session ids of LangGraph threads
META_KEY = "langgraph.thread_id"        # session meta holding the thread id
SUBGRAPH_SOURCE = "langgraph.subgraph"  # spawn_branch source of a subgraph namespace


class ThreadIndex:
    def __init__(self, session: Session):
        self.session = session
        self.graph: object | None = None
        self._reset()
        session.add_listener(self._on_events)

    def _reset(self) -> None:
        self.cps: dict[tuple[str, str], str] = {}          # (ns, checkpoint id) -> node id
        self.lg: dict[str, dict[str, Any]] = {}            # checkpoint node id -> its langgraph dict
        self.hidden: set[str] = set()                      # pruned checkpoint node ids
        self.values: dict[tuple[str, str, Any], dict[str, Any]] = {}  # (ns, channel, version) -> descriptor
        self.writes: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (ns, checkpoint id) -> writes dicts
        self.anchor: str | None = None

    def fresh(self) -> "ThreadIndex":
        """Bring the index up to date (the caller holds the session lock)."""
        g = self.session.graph
        if g is not self.graph:
            self._reset()
            self.graph = g
            for c in list(g.nodes.values()):
                self._add(c.id, c.metadata)
        return self

    def close(self) -> None:
        self.session.remove_listener(self._on_events)

    # --- listener ----------------------------------------------------------------------------
    def _on_events(self, _session: Session, events: list[Event]) -> None:
        if self.graph is None:
            return
        for ev in events:
            if isinstance(ev, NodeAppended):
                self._add(ev.node_id, ev.node.get("metadata") or {})
            elif isinstance(ev, NodeUpdated) and "metadata" in ev.fields:
                self._update(ev.node_id, ev.fields["metadata"])

    def _add(self, node_id: str, md: dict[str, Any]) -> None:
        lg = md.get("langgraph")
        if not isinstance(lg, dict):
            return
        kind = lg.get("kind")
        if kind == "checkpoint":
            self._checkpoint(node_id, lg)
            if md.get(HIDDEN):
                self.hidden.add(node_id)
        elif kind == "writes":
            self.writes.setdefault((lg["ns"], lg["checkpoint_id"]), []).append(lg)
        elif kind == "anchor":
            self.anchor = self.anchor or node_id

    def _update(self, node_id: str, md: dict[str, Any]) -> None:
        if isinstance(md.get("langgraph"), dict) and md["langgraph"].get("kind") == "checkpoint":
            self._checkpoint(node_id, md["langgraph"])
        if HIDDEN in md:
            (self.hidden.add if md[HIDDEN] else self.hidden.discard)(node_id)

    def _checkpoint(self, node_id: str, lg: dict[str, Any]) -> None:
        ns = lg["ns"]
        self.cps[(ns, lg["id"])] = node_id
        self.lg[node_id] = lg
        for ch, desc in lg["values"].items():
            self.values[(ns, ch, desc["v"])] = desc

    # --- queries -----------------------------------------------------------------------------
    def visible(self, ns: str | None = None) -> list[tuple[str, str, str]]:
        """(ns, checkpoint id, node id) of the checkpoints not pruned, newest id first."""
        out = [(k[0], k[1], nid) for k, nid in self.cps.items()
               if nid not in self.hidden and (ns is None or k[0] == ns)]
        out.sort(key=lambda t: t[1], reverse=True)
        return out

    def node_of(self, ns: str, checkpoint_id: str) -> str | None:
        nid = self.cps.get((ns, checkpoint_id))
        return None if nid is None or nid in self.hidden else nid
