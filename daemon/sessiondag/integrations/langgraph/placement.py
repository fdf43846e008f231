"""Where a new LangGraph checkpoint node goes on the session DAG (docs/integrations.md): in the root
namespace, called by ROOT after its parent checkpoint; in a subgraph namespace, on the spawn branch
called by the parent graph's checkpoint."""

from __future__ import annotations

from langgraph.checkpoint.base import CheckpointMetadata

from ... import ROOT, Call
from ...store import Session
from .index import SUBGRAPH_SOURCE, ThreadIndex


def parent_ns(ns: str) -> str:
    return ns.rsplit("|", 1)[0] if "|" in ns else ""


def place(s: Session, idx: ThreadIndex, ns: str, parent_id: str | None, md: CheckpointMetadata) -> tuple[str, str]:
    """(caller, predecessor) of a new checkpoint node."""
    parent = idx.cps.get((ns, parent_id)) if parent_id else None
    if ns == "":
        return ROOT, parent or ROOT
    if parent is not None:
        return s.graph.nodes[parent].caller, parent
    # first checkpoint of this subgraph invocation: a spawn branch called by the parent graph's
    # checkpoint (metadata.parents maps the enclosing namespaces to their checkpoint ids)
    enclosing = parent_ns(ns)
    got = md.get("parents")
    parents = got if isinstance(got, dict) else {}
    parent_cid = parents.get(enclosing)
    caller = idx.cps.get((enclosing, parent_cid)) if parent_cid else None
    caller = caller or anchor(s, idx)
    root = s.spawn_branch(caller, source=SUBGRAPH_SOURCE, content=ns)
    return root, root


def anchor(s: Session, idx: ThreadIndex) -> str:
    """The caller of subgraph branches and writes whose parent checkpoint is unknown."""
    return idx.anchor or s.append(Call("code", "langgraph/subgraphs", caller=ROOT, predecessor=None,
                                       metadata={"langgraph": {"kind": "anchor"}})).id
