"""The usage ledger of a session: every llm node's recorded usage (core/usage.py), rolled up along
caller edges, kept up to date from the store's change events.

Attribution. Every llm node is counted once, in one group of each roll-up:
- its *anchor*: the first node of the main conversation's chains met walking caller edges up from
  the node (the node itself when it is a turn's model call). A sub-agent's calls anchor at the
  spawn_agent tool call of the branch that spawned it, a function's calls at the chain node that
  called the function: the branch pays for what was done on its behalf.
- `branch`: the chains form a tree; each chain node belongs to one *segment*, a run of nodes that
  ends at a tip. A node continues its predecessor's segment when it is that node's first chain
  child, else (a fork, a retry, an edit) it starts a new one. A segment's row is what was spent on
  that branch alone, so the rows add up to the session; a branch's whole cost (its shared prefix
  too) is `usage(head_id=tip)`'s total.
- `subagent`: the spawn branch the call was made in (its root id), or null for the main agent.
- `turn`: the ROOT-level user node whose turn holds the anchor (null before the first turn).
- `model`: "provider/model" as requested. `node`: one row per llm node.
Nodes whose caller walk meets no main chain (a detached code node) anchor at null, never dropped.
A compaction summary (an llm node a client wrote, context/summary) is not a model call: not counted.

A Ledger is built on first use (one pass over the graph in seq order), then each appended or
updated node is applied in O(its caller depth). Walks are bounded by the node count: a caller
cycle in hostile data raises BrokenPredecessorChainError instead of looping. A reloaded graph
rebuilds the ledger. Costs are summed as integer picodollars (exact in any order).
"""

from __future__ import annotations

import threading
from typing import Iterable, NotRequired, TypedDict

from ..core.errors import BrokenPredecessorChainError
from ..core.graph import SUMMARY_NAME, Graph
from ..core.model import ROOT, Call
from ..core.prices import usd
from ..core.usage import NodeUsage, node_usage
from ..core.wire_types import OneRowOfSessionUsage, UsageTotalsOfASetOfLlmCalls
from ..store.events import Event, NodeAppended, NodeUpdated
from ..store.session import Session
from .per_session import PerSession

BY = ("branch", "node", "subagent", "model", "turn")
MAIN = ""  # lane of the main conversation


# a row's sums (`Totals.to_dict`: a usage row's fields after its keys) and a scope's total; one row of a
# roll-up: its keys (RowKeys below), then the sums. rpc_schema/schemas/usage_totals.json, usage_row.json
# (core/wire_types.py, generated)
UsageTotals = UsageTotalsOfASetOfLlmCalls
UsageRow = OneRowOfSessionUsage


class RowKeys(TypedDict):
    """What a roll-up row says of its group: `key` (the group's) and the fields its `by` names."""
    key: str | None
    node_id: NotRequired[str]  # by node
    model: NotRequired[str | None]  # by node
    branch: NotRequired[str | None]  # by node
    subagent: NotRequired[str | None]  # by node
    turn: NotRequired[str | None]  # by node
    head_id: NotRequired[str | None]  # by branch, subagent
    start_id: NotRequired[str | None]  # by branch
    name: NotRequired[str | None]  # by branch, subagent
    forked_from: NotRequired[str | None]  # by branch
    branch_root: NotRequired[str | None]  # by subagent
    user_node_id: NotRequired[str | None]  # by turn
    seq: NotRequired[int | None]  # by turn


class Usage(TypedDict):
    """`session/usage`'s result (but its session_id)."""
    by: str
    head_id: str | None
    rows: list[UsageRow]
    total: UsageTotals


class Totals:
    __slots__ = ("calls", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens",
                 "latency_ms", "cost_pusd", "unpriced_calls", "errors")

    def __init__(self) -> None:
        self.calls = self.input_tokens = self.output_tokens = self.cached_tokens = 0
        self.reasoning_tokens = self.cost_pusd = self.unpriced_calls = self.errors = 0
        self.latency_ms = 0.0

    def add(self, u: NodeUsage, error: bool, sign: int = 1) -> None:
        self.calls += sign
        self.input_tokens += sign * u.input_tokens
        self.output_tokens += sign * u.output_tokens
        self.cached_tokens += sign * u.cached_tokens
        self.reasoning_tokens += sign * u.reasoning_tokens
        self.latency_ms += sign * u.latency_ms
        self.errors += sign * error
        if u.cost_pusd is None:
            self.unpriced_calls += sign
        else:
            self.cost_pusd += sign * u.cost_pusd

    def merge(self, other: "Totals") -> None:
        for k in self.__slots__:
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def to_dict(self) -> UsageTotals:
        """Wire row fields. `cost_usd` is null unless every call in the row has a price;
        `priced_cost_usd` is then what the priced ones cost."""
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_tokens": self.cached_tokens, "reasoning_tokens": self.reasoning_tokens,
                "total_tokens": self.input_tokens + self.output_tokens,
                "latency_ms": round(self.latency_ms, 3), "errors": self.errors,
                "cost_usd": usd(self.cost_pusd) if not self.unpriced_calls else None,
                "priced_cost_usd": usd(self.cost_pusd), "unpriced_calls": self.unpriced_calls}


class _Entry:
    """One llm node as the ledger counts it."""
    __slots__ = ("usage", "error", "anchor", "sub", "seg", "turn", "chain_anchor", "_row")

    def __init__(self, usage: NodeUsage, error: bool, anchor: str | None, sub: str | None, seg: str | None,
                 turn: str | None, chain_anchor: str | None):
        self.usage, self.error, self.anchor, self.sub = usage, error, anchor, sub
        self.seg, self.turn, self.chain_anchor = seg, turn, chain_anchor
        self._row: UsageRow | None = None

    def row(self, nid: str, seg_tip: dict[str | None, str]) -> UsageRow:
        """Its `by: node` row (built once, shared: read-only; its branch tip read each time)."""
        r = self._row
        if r is None:
            t = Totals()
            t.add(self.usage, self.error)
            keys: RowKeys = {"key": nid, "node_id": nid, "model": self.usage.model_key, "branch": None,
                             "subagent": self.sub, "turn": self.turn}
            r = self._row = {**keys, **t.to_dict()}
        r["branch"] = seg_tip.get(self.seg)
        return r

    def keys(self) -> tuple[str | None, ...]:
        return self.seg, self.sub, self.usage.model_key, self.turn


class Ledger:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.lock = threading.Lock()
        self.lane: dict[str, str] = {ROOT: MAIN}          # chain node -> its lane (spawn root id, or MAIN)
        self.anchor: dict[str, str | None] = {ROOT: None}  # any node -> its main-chain anchor
        self.chain_anchor: dict[str, str | None] = {ROOT: None}  # any node -> first chain node (any lane)
        self.sub: dict[str, str | None] = {ROOT: None}     # any node -> the spawn root it runs under
        self.seg: dict[str, str] = {}                      # main chain node -> its segment's first node
        self.seg_tip: dict[str | None, str] = {}             # segment's first node -> its tip
        self.turn: dict[str, str | None] = {}               # main chain node -> its turn's user node
        self.has_child: set[str] = set()
        self.entries: dict[str, _Entry] = {}
        self.groups: tuple[dict[str | None, Totals], ...] = ({}, {}, {}, {})  # branch(seg), subagent, model, turn
        self.total = Totals()
        self.version = 0
        self.stale = False  # a change could not be applied: ledger_for builds a new one
        with self.lock:
            nodes = list(graph.nodes.values())
            if any(a.seq >= b.seq for a, b in zip(nodes, nodes[1:])):
                nodes.sort(key=lambda c: c.seq)
            for c in nodes:
                if c.id != ROOT:
                    self._add(c)

    # --- maintenance (under self.lock) ---------------------------------------------------------
    def _place(self, c: Call) -> None:
        """lane / anchor / segment / turn of a node whose caller and predecessor are placed."""
        nid = c.id
        if self.graph.is_chain_node(c):
            p = c.predecessor
            if c.is_spawn_root:
                lane = nid
            elif p is None or p == ROOT:
                lane = MAIN
            else:
                lane = self.lane.get(p, MAIN)
            self.lane[nid] = lane
            self.chain_anchor[nid] = nid
            if lane == MAIN:
                self.anchor[nid], self.sub[nid] = nid, None
                summary = c.name == SUMMARY_NAME  # beside the segment it covers: extends nothing
                if summary and p in self.seg:
                    seg = self.seg[p]
                elif p is None or p == ROOT or p not in self.seg or p in self.has_child:
                    seg = nid  # a branch start, or a fork
                else:
                    seg = self.seg[p]
                self.seg[nid] = seg
                if not summary:
                    if p is not None and p != ROOT:
                        self.has_child.add(p)
                    self.seg_tip[seg] = nid
                if c.role == "user" and c.caller == ROOT:
                    self.turn[nid] = nid
                else:
                    self.turn[nid] = self.turn.get(p) if p not in (None, ROOT) else None
                return
            self.sub[nid] = lane
            self.anchor[nid] = self._up(c.caller, self.anchor)
            return
        self.chain_anchor[nid] = self._up(c.caller, self.chain_anchor)
        self.anchor[nid] = self._up(c.caller, self.anchor)
        self.sub[nid] = self._up(c.caller, self.sub)

    def _up(self, start: str, memo: dict[str, str | None]) -> str | None:
        """memo[start], placing the callers above it first (bounded: a cycle raises)."""
        if start in memo:
            return memo[start]
        path: list[Call] = []
        nodes = self.graph.nodes
        cur = start
        limit = len(nodes) + 1
        while cur not in memo:
            c = nodes.get(cur)
            if c is None:
                memo[cur] = None  # a dangling caller: counted, at null
                break
            path.append(c)
            if len(path) > limit:
                raise BrokenPredecessorChainError(start, "the caller edges form a cycle")
            cur = c.caller
        for c in reversed(path):
            self._place(c)
        return memo.get(start)

    def _add(self, c: Call) -> None:
        if c.id not in self.anchor:  # placed already when a (hostile) earlier node names it as caller
            if c.caller not in self.anchor:
                self._up(c.caller, self.anchor)
            self._place(c)
        if c.role == "llm" and c.name != SUMMARY_NAME and c.id not in self.entries:
            self._count(c)  # a compaction summary is an llm node no model made: not a call

    def _count(self, c: Call) -> None:
        nid = c.id
        anchor = self.anchor.get(nid)
        e = _Entry(node_usage(c), c.status == "error", anchor, self.sub.get(nid),
                   self.seg.get(anchor) if anchor is not None else None,
                   self.turn.get(anchor) if anchor is not None else None, self.chain_anchor.get(nid))
        self.entries[nid] = e
        self._apply(e, 1)

    def _apply(self, e: _Entry, sign: int) -> None:
        for group, key in zip(self.groups, e.keys()):
            t = group.get(key)
            if t is None:
                t = group[key] = Totals()
            t.add(e.usage, e.error, sign)
            if sign < 0 and not t.calls:
                del group[key]
        self.total.add(e.usage, e.error, sign)

    def on_events(self, session: Session, events: list[Event]) -> None:
        if session.loaded_graph is not self.graph:
            return
        nodes = self.graph.nodes
        with self.lock:
            if self.stale:
                return
            try:
                self._on_events(nodes, events)
            except Exception:  # noqa: BLE001 - a listener must not fail a write; the next query rebuilds
                self.stale = True

    def _on_events(self, nodes: dict[str, Call], events: list[Event]) -> None:
        for ev in events:
            if isinstance(ev, NodeAppended):
                c = nodes.get(ev.node_id)
                if c is not None:
                    self._add(c)
            elif isinstance(ev, NodeUpdated):
                old = self.entries.get(ev.node_id)
                c = nodes.get(ev.node_id)
                if old is not None and c is not None:
                    self._apply(old, -1)
                    self._count(c)
            else:
                continue
            self.version += 1

    # --- queries -------------------------------------------------------------------------------
    def usage(self, by: str, head_id: str | None = None) -> Usage:
        """{by, head_id, rows, total}: `rows` partition the scope (the session, or the branch ending at
        `head_id` with every call made on its behalf) by `by`; `total` is the scope's."""
        if by not in BY:
            raise ValueError(f"by is one of {', '.join(BY)}")
        with self.lock:
            if head_id is None:
                entries: Iterable[tuple[str, _Entry]] | None = None
                total = self.total
            else:
                entries = self._scoped(head_id)
                total = Totals()
                for _, e in entries:
                    total.add(e.usage, e.error)
            rows = self._rows(by, entries)
            return {"by": by, "head_id": head_id, "rows": rows, "total": total.to_dict()}

    def totals(self) -> Totals:
        with self.lock:
            t = Totals()
            t.merge(self.total)
            return t

    def _scoped(self, head_id: str) -> list[tuple[str, _Entry]]:
        chain = {c.id for c in self.graph.get_branch(head_id)}
        return [(nid, e) for nid, e in self.entries.items() if e.anchor in chain or e.chain_anchor in chain]

    def _rows(self, by: str, entries: Iterable[tuple[str, _Entry]] | None) -> list[UsageRow]:
        g = self.graph
        if by == "node":
            items = entries if entries is not None else self.entries.items()
            return [e.row(nid, self.seg_tip) for nid, e in items]
        i = ("branch", "subagent", "model", "turn").index(by)
        if entries is None:
            groups = self.groups[i]
        else:
            groups = {}
            for _, e in entries:
                key = e.keys()[i]
                t = groups.get(key)
                if t is None:
                    t = groups[key] = Totals()
                t.add(e.usage, e.error)
        out: list[UsageRow] = []
        for key, t in groups.items():
            row: RowKeys
            if by == "branch":
                tip = self.seg_tip.get(key) if key is not None else None
                start = g.nodes.get(key) if key is not None else None
                row = {"key": key, "head_id": tip, "start_id": key, "name": g.branch_names.get(tip) if tip else None,
                       "forked_from": start.predecessor if start is not None and start.predecessor != ROOT else None}
            elif by == "subagent":
                tip = g.spawn_heads.get(key) if key is not None else None
                row = {"key": key, "branch_root": key, "head_id": tip, "name": g.branch_names.get(tip) if tip else None}
            elif by == "turn":
                row = {"key": key, "user_node_id": key, "seq": g.nodes[key].seq if key in g.nodes else None}
            else:
                row = {"key": key}
            out.append({**row, **t.to_dict()})  # its keys, then its sums
        return out


_ledgers: PerSession[Ledger] = PerSession(Ledger)


def ledger_for(session: Session) -> Ledger:
    """The ledger of a store Session: built on first use (hold the session lock), kept current by its
    change events, rebuilt when the graph reloads or a change could not be applied."""
    return _ledgers.get(session)


def drop_ledger(session: Session) -> None:
    _ledgers.drop(session)


def usage_total(g: Graph) -> UsageTotals:
    """The session total alone (what a list of sessions shows), in one pass over the nodes: the
    same calls the ledger counts, without its roll-ups (a ledger already built answers instead)."""
    t = Totals()
    for c in g.nodes.values():
        if c.role == "llm" and c.name != SUMMARY_NAME:
            t.add(node_usage(c), c.status == "error")
    return t.to_dict()


def session_total(session: Session) -> UsageTotals:
    """`usage_total` of a store Session, or its ledger's total when one is kept (caller holds the
    session lock)."""
    led = _ledgers.peek(session)
    return led.usage("model")["total"] if led is not None else usage_total(session.graph)


def session_usage(session: Session, by: str = "branch", head_id: str | None = None) -> Usage:
    """`session/usage`: the roll-up of `session` (caller holds the session lock)."""
    return ledger_for(session).usage(by, head_id)
