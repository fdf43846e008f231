"""Compaction: an append-only summary node standing in for an exact run of chain nodes.

`compact` appends `llm` node "context/summary" with predecessor = the predecessor of the first
covered node and `metadata.covers_ids` = the covered chain node ids (ids, never seq ranges). No edge
is rewritten; the kept tail keeps its ids; HEAD stays put. Session meta `active_summary` names the
only active summary: rendering substitutes it on any chain that holds its whole segment.

Rolling: when `covers_ids` names the active summary (or includes its whole segment), the new summary
absorbs it — its covers_ids are the previous segment plus the new ids, `metadata.absorbs` names it,
and the previous summary becomes inert.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import InvalidNodeError
from ..core.model import ROOT, Call
from ..store.session import Session
from .aging import SUMMARY_KEY
from .graphinfo import is_summary, is_tool_call

SUMMARY_NAME = "context/summary"


def compact(session: Session, covers_ids: list[str], summary: str, *,
            metadata: dict[str, Any] | None = None) -> Call:
    if not isinstance(summary, str) or not summary:
        raise InvalidNodeError("a summary is a non-empty string")
    ids = list(covers_ids)
    if not ids or not all(isinstance(i, str) for i in ids):
        raise InvalidNodeError("covers_ids must be a non-empty list of node ids")
    g = session.graph
    absorbs = None
    active = g.extra.get(SUMMARY_KEY)
    if active is not None and active in ids:
        if ids[0] != active:
            raise InvalidNodeError("an absorbed summary must come first in covers_ids")
        prev = g.get(active)
        ids = list(prev.metadata["covers_ids"]) + ids[1:]
        absorbs = active
    for i in ids:
        c = g.get(i)
        if is_summary(c):
            raise InvalidNodeError(f"{i!r} is an inactive summary; only the active one can be absorbed")
    chain = g.get_branch(ids[-1])
    pos = {c.id: k for k, c in enumerate(chain)}
    first = pos.get(ids[0])
    if first is None or [c.id for c in chain[first:first + len(ids)]] != ids:
        raise InvalidNodeError("covers_ids must be a contiguous run of one chain, oldest first")
    if active is not None and absorbs is None:
        old = g.nodes.get(active)
        if old is not None and set(old.metadata.get("covers_ids", ())) <= set(ids):
            absorbs = active  # the new segment swallows the previous one whole
    covered = set(ids)
    for i in ids:
        if g.nodes[i].role != "llm":
            continue
        for k in g.children_by_caller(i):
            kid = g.nodes[k]
            if kid.id not in covered and kid.predecessor is not None and is_tool_call(g, kid):
                raise InvalidNodeError(f"the kept tail would keep tool result {kid.id!r} of covered llm call {i!r}")
    md = {**(metadata or {}), "covers_ids": ids}
    if absorbs is not None:
        md["absorbs"] = absorbs
    first_node = g.nodes[ids[0]]
    node = session.append(Call("llm", SUMMARY_NAME, output=summary, caller=ROOT,
                               predecessor=first_node.predecessor, metadata=md))
    session.set_meta(SUMMARY_KEY, node.id)
    return node

