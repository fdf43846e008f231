"""The in-memory session graph: nodes, lazy indexes, write invariants, head rules, edge-only walks.

Pure: no I/O. The store feeds it records (appends, updates, meta ops) from its durable log, in log
order, so replaying the log always rebuilds the same graph. Every mutation comes in two steps:
`check_*` (raise, change nothing) and `apply_*` (never raises for a checked record).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from operator import attrgetter, lt
from typing import Any, Iterable

import orjson

from . import main_line
from .depth import ENCODER_LIMIT, MAX_DEPTH, check_encodable, check_node_fields
from .errors import BrokenPredecessorChainError, InvalidNodeError, NotFoundError, PredecessorMissingError
from .model import ROOT, UPDATABLE, Call, usage_of, validate_fields
from .branch_row import BranchRow

_seq_of = attrgetter("seq")

MAIN = ROOT  # lane id of the main conversation (everything that descends from the ROOT sentinel)
SUMMARY_NAME = "context/summary"


@dataclass(frozen=True, slots=True)
class Branch:
    head_id: str
    name: str | None
    main: bool
    current: bool
    spawn_root: str | None
    status: str
    seq: int

    def to_dict(self) -> BranchRow:
        return {"head_id": self.head_id, "name": self.name, "main": self.main, "current": self.current,
                "spawn_root": self.spawn_root, "status": self.status, "seq": self.seq}


class Graph:
    def __init__(self, root: Call):
        self.nodes: dict[str, Call] = {ROOT: root}
        self.head_id: str = ROOT
        self.branch_names: dict[str, str] = {}   # tip id -> name; names follow their tip
        self.spawn_heads: dict[str, str] = {}    # spawn root id -> tip of that spawn branch
        self.extra: dict[str, Any] = {}          # session meta owned by other layers (summary, aging…)
        self.last_seq = root.seq
        self.usage_total = [0, 0]
        self._lane: dict[str, str] = {ROOT: MAIN}
        self._first_id: str | None = None
        self._by_pred: dict[str, list[str]] | None = None
        self._by_caller: dict[str, list[str]] | None = None

    @classmethod
    def from_snapshot(cls, calls: list[Call], *, head_id: str, branch_names: dict[str, str],
                      spawn_heads: dict[str, str], usage_total: list[int] | None = None) -> "Graph":
        """Rebuild a graph from trusted nodes in seq order (ROOT first) plus the head state a
        snapshot recorded: the bulk equivalent of apply_append over each node, without the
        per-node head bookkeeping (the snapshot carries its outcome, and its usage total if given)."""
        if not calls or calls[0].id != ROOT:
            raise InvalidNodeError("a snapshot must start with ROOT")
        seqs = list(map(_seq_of, calls))
        if not all(map(lt, seqs, islice(seqs, 1, None))):  # not strictly increasing
            calls = sorted(calls, key=_seq_of)
        g = cls(calls[0])
        nodes, lanes = g.nodes, g._lane
        usage_in = usage_out = 0
        count_usage = usage_total is None
        first = None
        last = calls[0].seq
        for c in calls[1:] if len(calls) > 1 else ():
            nid = c.id
            if nid in nodes or c.seq == last:
                raise InvalidNodeError(f"snapshot node {nid!r} is duplicated or shares a seq")
            p = c.predecessor
            if c.caller not in nodes or (p is not None and p not in nodes and p != ROOT):
                # edges point to older nodes only, so no walk over callers or predecessors can cycle
                raise InvalidNodeError(f"snapshot node {nid!r} names a caller or predecessor that does not precede it")
            last = c.seq
            nodes[nid] = c
            if count_usage and c.role == "llm":
                i, o = usage_of(c)
                usage_in += i
                usage_out += o
            if p is None:
                if c.is_spawn_root:
                    lanes[nid] = nid
                continue
            if first is None and p == ROOT:
                first = nid
            lane = lanes.get(p, MAIN)
            if lane != MAIN:  # main-lane nodes are the default: not stored (100k entries ≈ 5 MB)
                lanes[nid] = lane
        g.last_seq = last
        g.usage_total = ([usage_in, usage_out] if usage_total is None
                         else [int(usage_total[0]), int(usage_total[1])])
        g._first_id = first
        g.head_id = head_id
        g.branch_names = dict(branch_names)
        g.spawn_heads = dict(spawn_heads)
        return g

    @classmethod
    def from_checked(cls, nodes: dict[str, Call], *, last_seq: int, spawned: bool, head_id: str,
                     branch_names: dict[str, str], spawn_heads: dict[str, str],
                     usage_total: list[int]) -> "Graph":
        """from_snapshot over a node table proved to pass its checks as it was built (ROOT first,
        seqs strictly increasing in table order, the last `last_seq`, every caller and predecessor
        an earlier node: store/snapshot.py's Fold) and the usage total a snapshot recorded: the
        same graph, and `nodes` becomes its node table as it is. `spawned`: some node may be a
        spawn-branch root (else no lane but main)."""
        g = cls(nodes[ROOT])
        g.nodes = nodes
        g._first_id = next((c.id for c in islice(nodes.values(), 1, None) if c.predecessor == ROOT), None)
        if spawned:
            lanes = g._lane
            for c in islice(nodes.values(), 1, None):
                p = c.predecessor
                if p is None:
                    if c.is_spawn_root:
                        lanes[c.id] = c.id
                elif (lane := lanes.get(p, MAIN)) != MAIN:
                    lanes[c.id] = lane
        g.usage_total = [int(usage_total[0]), int(usage_total[1])]
        g.last_seq = last_seq
        g.head_id = head_id
        g.branch_names = dict(branch_names)
        g.spawn_heads = dict(spawn_heads)
        return g

    @classmethod
    def from_untrusted(cls, calls: list[Call], *, head_id: str) -> "Graph":
        """A graph of hostile nodes (a remote's snapshot), ROOT first in increasing seq order,
        accepted exactly when check_append (spawn roots allowed) over each in turn would: in bulk.
        Fields encodable: one encode of them all (the same nesting budget per field; on a refusal
        each node is checked to name it). Ids, seqs and edges to older nodes: from_snapshot. The
        predecessor rules per node, as check_append holds them."""
        nested: object = [[c.input, c.output, c.metadata] for c in calls[1:]]
        for _ in range(ENCODER_LIMIT - MAX_DEPTH - 2):   # each field nests 2 levels in: as check_encodable
            nested = [nested]
        try:
            orjson.dumps(nested)
        except orjson.JSONEncodeError:
            for c in calls[1:]:
                for field in ("input", "output", "metadata"):
                    check_encodable(getattr(c, field), field)
        g = cls.from_snapshot(calls, head_id=head_id, branch_names={}, spawn_heads={})
        for c in calls[1:]:
            g._check_predecessor(c, c.is_spawn_root)
        return g

    # --- lazy indexes ------------------------------------------------------------------------
    def children_by_predecessor(self, node_id: str) -> list[str]:
        if self._by_pred is None:
            idx: dict[str, list[str]] = {}
            for c in self.nodes.values():
                if c.predecessor is not None:
                    idx.setdefault(c.predecessor, []).append(c.id)
            self._by_pred = idx
        return self._by_pred.get(node_id, [])

    def children_by_caller(self, node_id: str) -> list[str]:
        idx = self._by_caller
        return (self.callers() if idx is None else idx).get(node_id, [])

    def callers(self) -> dict[str, list[str]]:
        """caller id -> the ids of the nodes it called, in the order they joined: every node that
        has callees is a key. Built on first use, kept up to date by apply_append; read-only."""
        idx = self._by_caller
        if idx is None:
            idx = {}
            get = idx.get
            for nid, c in self.nodes.items():
                kids = get(c.caller)
                if kids is None:
                    idx[c.caller] = [nid]
                else:
                    kids.append(nid)
            root = self.nodes[ROOT]  # not a callee of its own caller (itself, as make_root writes it)
            kids = idx[root.caller]
            kids.remove(ROOT)  # the first entry when ROOT came first, as it does
            if not kids:
                del idx[root.caller]
            self._by_caller = idx
        return idx

    def get(self, node_id: str) -> Call:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise NotFoundError("node", node_id) from None

    def is_chain_node(self, c: Call) -> bool:
        return c.id == ROOT or c.predecessor is not None or c.is_spawn_root or c.id == self._first_id

    # --- appends -----------------------------------------------------------------------------
    def check_append(self, c: Call, *, spawn: bool = False) -> None:
        check_node_fields(c.input, c.output, c.metadata)
        if c.id in self.nodes:
            raise InvalidNodeError(f"node id {c.id!r} already exists")
        if c.caller not in self.nodes:
            raise InvalidNodeError(f"caller {c.caller!r} does not exist")
        p = c.predecessor
        self._check_predecessor(c, spawn)

    def _check_predecessor(self, c: Call, spawn: bool) -> None:
        """check_append's rules for `c`'s spawn flag and predecessor edge (its nodes already hold
        the predecessor)."""
        if c.metadata.get("spawn_branch_root") and not spawn:
            raise InvalidNodeError("spawn-branch roots are created only through spawn_branch")
        p = c.predecessor
        if p is None:
            if c.caller == ROOT and c.is_conversational:
                raise PredecessorMissingError(c.role, c.name)
            return
        if p == ROOT:
            if c.caller != ROOT:
                raise InvalidNodeError("only ROOT-level nodes may take the sentinel predecessor 'ROOT'")
            return
        pred = self.nodes.get(p)
        if pred is None:
            raise InvalidNodeError(f"predecessor {p!r} does not exist")
        if not self.is_chain_node(pred):
            raise InvalidNodeError(f"predecessor {p!r} is not on a chat chain (it has no predecessor)")
        if pred.name == SUMMARY_NAME:
            raise InvalidNodeError("a compaction summary cannot be a predecessor; extend the kept tail")

    def check_replayed(self, c: Call) -> None:
        """A node read back from disk (journal replay), before apply_append: the rules a snapshot
        load holds too (from_snapshot), and the types its walks rely on. A new id, a seq after
        every earlier one, a caller and a predecessor that already exist: caller and predecessor
        edges always point to older nodes, so no walk over them can cycle."""
        if not (type(c.id) is str and type(c.seq) is int and type(c.caller) is str
                and (c.predecessor is None or type(c.predecessor) is str) and type(c.role) is str
                and type(c.status) is str and isinstance(c.metadata, dict)):
            raise InvalidNodeError("a node record with fields of the wrong type")
        if c.id in self.nodes:
            raise InvalidNodeError(f"node id {c.id!r} appears twice")
        if c.seq <= self.last_seq:
            raise InvalidNodeError(f"node {c.id!r} has seq {c.seq}, not after the last seq {self.last_seq}")
        if c.caller not in self.nodes:
            raise InvalidNodeError(f"node {c.id!r}: its caller {c.caller!r} does not exist yet")
        p = c.predecessor
        if p is not None and p != ROOT and p not in self.nodes:
            raise InvalidNodeError(f"node {c.id!r}: its predecessor {p!r} does not exist yet")

    def apply_append(self, c: Call) -> None:
        p = c.predecessor
        # decided before `c` joins the indexes: does `c` extend a named tip (the name follows it)?
        moved_name = (p is not None and p in self.branch_names and c.name != SUMMARY_NAME
                      and not self._chain_children(p))
        self.nodes[c.id] = c
        if c.seq > self.last_seq:
            self.last_seq = c.seq
        if c.role == "llm":
            i, o = usage_of(c)
            self.usage_total[0] += i
            self.usage_total[1] += o
        if self._by_caller is not None:
            self._by_caller.setdefault(c.caller, []).append(c.id)
        if p is None:
            if c.is_spawn_root:
                self._lane[c.id] = c.id
                self.spawn_heads[c.id] = c.id
            return
        if self._first_id is None and p == ROOT:
            self._first_id = c.id
        lane = self._lane.get(p, MAIN)
        if lane != MAIN:
            self._lane[c.id] = lane
        if self._by_pred is not None:
            self._by_pred.setdefault(p, []).append(c.id)
        if c.name == SUMMARY_NAME:
            return  # a summary joins the chain beside the segment it covers; HEAD stays put
        if moved_name:
            self.branch_names[c.id] = self.branch_names.pop(p)
        if lane == MAIN:
            self.head_id = c.id  # extension advances; a fork moves head to the new node
        else:
            self.spawn_heads[lane] = c.id
            if self.head_id == p:
                self.head_id = c.id

    def _chain_children(self, node_id: str) -> list[str]:
        return [k for k in self.children_by_predecessor(node_id) if self.nodes[k].name != SUMMARY_NAME]

    # --- updates -----------------------------------------------------------------------------
    def check_update(self, node_id: str, fields: dict[str, Any]) -> None:
        c = self.get(node_id)
        if c.id == ROOT:
            raise InvalidNodeError("ROOT cannot be updated")
        bad = set(fields) - UPDATABLE
        if bad:
            raise InvalidNodeError(f"only {sorted(UPDATABLE)} can be updated, not {sorted(bad)}")
        status = fields.get("status", c.status)
        md = fields.get("metadata", {})
        check_encodable(fields.get("output"), "output")
        check_encodable(md, "metadata")
        validate_fields(c.role, status, c.name, c.caller, c.predecessor, c.reads, md, c.id)
        if c.is_terminal and status != c.status:
            raise InvalidNodeError(f"node {node_id!r} is {c.status}; a terminal node cannot change status")
        if "spawn_branch_root" in md:
            raise InvalidNodeError("spawn_branch_root cannot be changed")

    def apply_update(self, node_id: str, fields: dict[str, Any]) -> None:
        c = self.nodes[node_id]
        c.touch()  # decode a lazily loaded body before changing it
        i0, o0 = usage_of(c)
        if "output" in fields:
            c.output = fields["output"]
        if "metadata" in fields:
            c.metadata = {**c.metadata, **fields["metadata"]}
        if "status" in fields:
            c.status = fields["status"]
            if c.is_terminal and c.role == "code" and c.predecessor is not None and c.predecessor == self.head_id:
                self.head_id = c.id
        c.touch()  # again after the last change: an encoding cached meanwhile is dropped
        i1, o1 = usage_of(c)
        self.usage_total[0] += i1 - i0
        self.usage_total[1] += o1 - o0

    # --- head and names ----------------------------------------------------------------------
    def check_checkout(self, head_id: str) -> None:
        c = self.get(head_id)
        if not self.is_chain_node(c) or c.name == SUMMARY_NAME:
            raise InvalidNodeError(f"node {head_id!r} is not a branch position")

    def apply_checkout(self, head_id: str) -> None:
        self.head_id = head_id

    def check_name(self, head_id: str, name: str | None) -> None:
        self.check_checkout(head_id)
        if name is not None and (not isinstance(name, str) or not name or len(name) > 200):
            raise InvalidNodeError("a branch name is a non-empty string of at most 200 characters")

    def apply_name(self, head_id: str, name: str | None) -> None:
        for k in [k for k, v in self.branch_names.items() if v == name or k == head_id]:
            del self.branch_names[k]
        if name is not None:
            self.branch_names[head_id] = name

    # --- walks -------------------------------------------------------------------------------
    def get_branch(self, head_id: str | None = None) -> list[Call]:
        """The linear history from the branch start to `head_id` (default: HEAD), predecessors only."""
        cur = self.head_id if head_id is None else head_id
        if cur == ROOT:
            return []
        out: list[Call] = []
        node: Call | None = self.get(cur)
        while node is not None:
            out.append(node)
            node = self.step_back(node)
        out.reverse()
        return out

    def step_back(self, node: Call) -> Call | None:
        """One step of a branch walk: the node's predecessor, or None at a legal branch start
        (after a 'ROOT' sentinel, a spawn root, the first node). Broken data raises."""
        p = node.predecessor
        if p == ROOT:
            return None
        if p is None:
            if node.is_spawn_root or node.id == self._first_id:
                return None
            raise BrokenPredecessorChainError(node.id, "no predecessor and not a branch start")
        nxt = self.nodes.get(p)
        if nxt is None:
            raise BrokenPredecessorChainError(node.id, f"predecessor {p!r} is missing")
        if nxt.seq >= node.seq:
            raise BrokenPredecessorChainError(node.id, f"predecessor {p!r} does not precede it")
        return nxt

    def caller_of(self, c: Call) -> Call:
        """One step up the caller edges. Every edge points to an older node (the store checks it at
        each write, replay and snapshot load); one that does not raises, so no walk can cycle."""
        nxt = self.get(c.caller)
        if nxt.seq >= c.seq:
            raise InvalidNodeError(f"node {c.id!r}: its caller {c.caller!r} does not precede it")
        return nxt

    def branch_start(self, head_id: str) -> str:
        return self.get_branch(head_id)[0].id if head_id != ROOT else ROOT

    def list_branches(self) -> list[Branch]:
        """Every branch tip. Raises BrokenPredecessorChainError, as get_branch does, if any walk
        back from a tip would meet broken data: a dangling or non-preceding predecessor, or a
        ROOT-level conversational node with no predecessor that is not a branch start (an orphan)."""
        tips = []
        for c in self.nodes.values():
            if c.id == ROOT:
                continue
            if c.predecessor is not None:
                self.step_back(c)  # one step per chain node validates every walk from every tip
            elif (c.caller == ROOT and c.is_conversational and not c.is_spawn_root
                  and c.id != self._first_id):
                raise BrokenPredecessorChainError(c.id, "no predecessor and not a branch start")
            if self.is_chain_node(c) and c.name != SUMMARY_NAME and not self._chain_children(c.id):
                tips.append(c)
        main_tip = self._main_tip()
        out = []
        for c in sorted(tips, key=lambda c: c.seq):
            lane = self._lane.get(c.id, MAIN)
            out.append(Branch(c.id, self.branch_names.get(c.id), c.id == main_tip, c.id == self.head_id,
                              None if lane == MAIN else lane, c.status, c.seq))
        return out

    def _main_tip(self) -> str | None:
        # the oldest line, or a retry that worked (core/main_line.py)
        return main_line.main_tip(lambda nid: [self.nodes[k] for k in self._chain_children(nid)])

    def descendants_by_caller(self, node_id: str) -> Iterable[Call]:
        stack = list(reversed(self.children_by_caller(node_id)))
        while stack:
            c = self.nodes[stack.pop()]
            yield c
            stack.extend(reversed(self.children_by_caller(c.id)))
