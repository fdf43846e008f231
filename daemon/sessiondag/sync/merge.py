"""Merging a remote continuation of a session into the local one: a union of immutable nodes.

- A node on both sides must be the same node: equal once each side's renumbering is undone
  (`original`: the seq and origin a sync recorded in `metadata.sync_origin`). If not, the pull is
  a typed `sync_conflict` naming the node, and nothing changes.
- The remote's other nodes join the local DAG where their predecessors and callers are, in the
  remote's seq order, so they show as their own branch(es). They are appended through the store's
  write path (checked like any append) with seqs after the local maximum. When that changes any
  seq, every node the pull adds keeps its original seq and origin in `metadata.sync_origin`
  ({seq, remote, commit}; a node renumbered before keeps its first origin): the remote commit
  numbers them as the machine that recorded their manifests did, so a manifest recorded there
  replays here (context/synced_manifest.py). Local nodes keep their seqs, so every manifest
  recorded here (last_seq, aged_before_seq) replays byte for byte.
- HEAD stays where the user is; only a fast-forward (the local commit is an ancestor of the
  remote's, nothing local since) whose remote head continues the local head's line moves it there.
- The remote's branch names join for tips that have none here (a name taken here is not moved).
- The turn commit that records the merge names both parents (store commit_turn's merge_parent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from ..core.errors import InvalidNodeError, SessionDagError
from ..core.graph import Graph
from ..core.model import Call
from ..context.synced_manifest import ORIGIN_KEY
from .errors import RemoteDataError, SyncConflictError

if TYPE_CHECKING:
    from ..store.session import Session
    from .fetch import RemoteMeta, RemoteNode

MERGE_KEY = "sync_last_merge"   # session meta: {remote, commit} of the last merged remote commit


def original(d: dict[str, object]) -> dict[str, object]:
    """A node as it was recorded where it was made: the renumbering of any sync undone."""
    md = d.get("metadata")
    if not isinstance(md, dict) or ORIGIN_KEY not in md:
        return d
    md = dict(md)
    origin = md.pop(ORIGIN_KEY)
    out = {**d, "metadata": md}
    if isinstance(origin, dict) and isinstance(origin.get("seq"), int):
        out["seq"] = origin["seq"]
    return out


@dataclass
class Plan:
    new: list[RemoteNode] = field(default_factory=list)   # remote node dicts to append, in order
    names: dict[str, str] = field(default_factory=dict)       # tip id -> name to give it
    head: str | None = None                                   # checkout after the appends (None: stay)
    shared: int = 0


def plan(local: Graph, meta: RemoteMeta, remote_nodes: list[RemoteNode], *, origin: dict[str, str],
         fast_forward: bool) -> Plan:
    p = Plan()
    seqs = [d.get("seq") for d in remote_nodes]
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in seqs) or len(set(seqs)) != len(seqs):
        raise RemoteDataError("the remote snapshot's seqs are not unique integers")
    nodes = local.nodes
    next_seq = local.last_seq + 1
    for d in remote_nodes:
        nid = cast(str, d["id"])   # a str: read_objects checked it
        mine = nodes.get(nid)
        if mine is not None:
            if original(mine.to_dict()) != original(d):
                raise SyncConflictError(f"node {nid!r} differs between this session and the remote: nothing merged",
                                        node_id=nid)
            p.shared += 1
            continue
        p.new.append(d)
    renumbered = any(d.get("seq") != next_seq + i for i, d in enumerate(p.new))
    for i, d in enumerate(p.new):
        md = d.get("metadata")
        if isinstance(md, dict):
            md = dict(md)   # a copy: the origin is added to the node appended, not to the remote's
        if isinstance(md, dict) and renumbered and ORIGIN_KEY not in md:
            md[ORIGIN_KEY] = {**origin, "seq": d.get("seq")}
        p.new[i] = {**d, "metadata": md}
    added = {d["id"] for d in p.new}
    for tip, name in meta["branch_names"].items():
        if isinstance(tip, str) and isinstance(name, str) and tip in added and name not in local.branch_names.values():
            p.names[tip] = name
    if fast_forward and _continues(remote_nodes, meta["head_id"], local):
        p.head = meta["head_id"]
    return p


def _continues(remote_nodes: list[RemoteNode], remote_head: object, local: Graph) -> bool:
    """Does the remote's head continue the local head's line (the local head on its chain)? The
    walk goes through the remote's new nodes, then the local graph's."""
    by_id = {d["id"]: d for d in remote_nodes}
    cur, steps = remote_head, 0
    while isinstance(cur, str) and steps <= len(by_id) + len(local.nodes):
        if cur == local.head_id:
            return True
        if cur in by_id:
            cur = by_id[cur].get("predecessor")
        elif cur in local.nodes:
            cur = local.nodes[cur].predecessor
        else:
            return False
        steps += 1
    return False


def calls_of(p: Plan) -> list[Call]:
    """Fresh Calls of the nodes to append (built, so validated, from hostile dicts)."""
    out = []
    for d in p.new:
        try:
            c = Call.from_dict({k: v for k, v in d.items() if k != "seq"})
        except (SessionDagError, TypeError, ValueError) as e:
            raise RemoteDataError(f"remote node {d.get('id')!r} is invalid: {e}") from None
        out.append(c)
    return out


def check(local: Graph, p: Plan) -> None:
    """Every append of the plan, tried on a scratch graph over the same nodes (the local graph is
    not touched): an append the store would refuse is RemoteDataError before anything is written."""
    base = sorted(local.nodes.values(), key=lambda c: c.seq)
    g = Graph.from_snapshot(base, head_id=local.head_id, branch_names=local.branch_names,
                            spawn_heads=local.spawn_heads, usage_total=list(local.usage_total))
    for c in calls_of(p):
        try:
            g.check_append(c, spawn=c.is_spawn_root)
        except (InvalidNodeError, SessionDagError) as e:
            raise RemoteDataError(f"remote node {c.id!r} does not join this session: {e}") from None
        c.seq = g.last_seq + 1
        g.apply_append(c)
    if p.head is not None and p.head not in g.nodes:
        raise RemoteDataError(f"the remote head {p.head!r} is not a node")


def apply(session: Session, p: Plan, *, message: str, merge_parent: bytes, merged: dict[str, str]) -> str | None:
    """Write the plan through the session's write path (caller holds the session lock and has
    checked the plan against the graph it sees) and commit it with both parents."""
    stay = session.graph.head_id
    with session.batched():
        for c in calls_of(p):
            if c.is_spawn_root:
                session.append(c, _spawn=True)
            else:
                session.append(c)
        for tip, name in p.names.items():
            try:
                session.name_branch(tip, name)
            except InvalidNodeError:
                pass  # a name the local graph refuses (taken meanwhile): the tip stays unnamed
        target = p.head or stay
        if session.graph.head_id != target:
            session.checkout(target)
        session.set_meta(MERGE_KEY, merged)
    sha: str | None = session.commit_turn(message, merge_parent=merge_parent)
    return sha
