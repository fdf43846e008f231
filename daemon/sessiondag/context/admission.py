"""Admission: which part of an anchor's caller subtree a render shows (the frame and expose rules).

An anchor (a chain node, context/graphinfo.py) renders with the callees its frame and `expose`
rules admit, depth-first in pre-order; an llm node's retried tool calls count once. The admitted
subtree of an anchor is cached per expose default (context/cache.py) unless it depends on the head.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

from ..core.graph import Graph
from ..core.model import Call
from . import policy
from .cache import RenderCache
from .graphinfo import SYSTEM_PROMPT_NAME, RenderError, is_anchor, is_hidden_context

_seq = attrgetter("seq")


@dataclass
class Walk:
    graph: Graph
    expose_default: str
    last_seq: int
    spine_pos: dict[str, int]
    frame: Call | None = None
    open_ids: frozenset[str] = frozenset()
    volatile: bool = False   # the result depends on the head (duplicate tool_call_ids): do not cache


def cached_subtree(cache: RenderCache, w: Walk, x: Call) -> tuple[list[Call], int, bool]:
    """(admitted subtree of anchor x in seq order, its max seq, whether it depends on the head)."""
    per = cache.subtrees.get(x.id)
    if per is not None:
        hit = per.get(w.expose_default)
        if hit is not None and hit[1] <= w.last_seq:
            return hit[0], hit[1], False
    version = cache.version
    if w.frame is None and not w.open_ids:  # a top-level walk is a fresh one but for `volatile`
        was = w.volatile
        w.volatile = False
        sub = admit(w, x)
        volatile, w.volatile = w.volatile, was
    else:
        fresh = Walk(w.graph, w.expose_default, w.last_seq, w.spine_pos)
        sub = admit(fresh, x)
        volatile = fresh.volatile
    sub.sort(key=_seq)
    hit = (sub, sub[-1].seq if sub else 0)
    if cache.version == version and not volatile:
        cache.subtrees.setdefault(x.id, {})[w.expose_default] = hit
    return sub, hit[1], volatile


def _expose(c: Call, default: str) -> str:
    e = c.metadata.get("expose")
    if e is None:
        return default
    if not isinstance(e, str) or e not in policy.EXPOSE_VALUES:
        raise RenderError(f"metadata.expose must be one of {policy.EXPOSE_VALUES}, got {e!r}", c.id)
    return e


def admit(w: Walk, x: Call) -> list[Call]:
    """An anchor and the part of its caller subtree the frame/expose rules admit."""
    out: list[Call] = []
    if x.name == SYSTEM_PROMPT_NAME or (is_hidden_context(x)):
        return out
    if x.role == "code" and x.id not in w.open_ids:
        e = _expose(x, w.expose_default)
        if e == "none":
            return out
        out.append(x)
        if e == "io":
            return out
    else:
        out.append(x)
    _visit(w, x, out, w.frame is not None and x.id == w.frame.id)
    return out


def _visit(w: Walk, x: Call, out: list[Call], inside: bool) -> None:
    """Append the admitted callees of `x` in depth-first pre-order. Iterative: a caller chain may
    be thousands deep."""
    g = w.graph
    nodes = g.nodes
    frame = w.frame
    stack = [(iter(_callees(w, x)), inside)]
    while stack:
        it, inside = stack[-1]
        for cid in it:
            c = nodes[cid]
            if c.seq > w.last_seq or is_anchor(g, c) or is_hidden_context(c):
                continue
            if frame is not None:
                if c.id in w.open_ids:
                    out.append(c)
                    stack.append((iter(_callees(w, c)), inside or c.id == frame.id))
                    break
                if not inside and c.seq >= frame.seq:
                    continue
            if c.role == "code":
                e = _expose(c, w.expose_default)
                if e == "none":
                    continue
                out.append(c)
                if e != "full":
                    continue
            else:
                out.append(c)
            stack.append((iter(_callees(w, c)), inside))
            break
        else:
            stack.pop()


def _callees(w: Walk, x: Call) -> list[str]:
    kids = w.graph.children_by_caller(x.id)
    if x.role == "llm" and len(kids) > 1:
        kids = _dedupe_tool_calls(w, kids)
    return kids


def _dedupe_tool_calls(w: Walk, kids: list[str]) -> list[str]:
    """One node per tool_call_id under an llm node (a retried tool call): the open frame, else the
    one on the chain, else the newest."""
    g, spine_pos, opened = w.graph, w.spine_pos, w.open_ids
    nodes = g.nodes
    tcs = []
    for cid in kids:
        c = nodes[cid]
        if c.role == "code":
            tc = c.metadata.get("tool_call_id")
            if tc is not None:
                tcs.append(tc)
    if len(tcs) < 2 or len(set(tcs)) == len(tcs):  # the common case: no tool call retried
        return kids
    chosen: dict[str, str] = {}
    for cid in kids:
        c = nodes[cid]
        tc = c.metadata.get("tool_call_id") if c.role == "code" else None
        if tc is None:
            continue
        prev = chosen.get(tc)
        if prev is None:
            chosen[tc] = cid
            continue
        p = nodes[prev]
        if (cid in opened, cid in spine_pos, c.seq) > (prev in opened, prev in spine_pos, p.seq):
            chosen[tc] = cid
    if len(chosen) == sum(1 for cid in kids if nodes[cid].role == "code"
                          and nodes[cid].metadata.get("tool_call_id") is not None):
        return kids
    w.volatile = True
    keep = set(chosen.values())
    return [cid for cid in kids if nodes[cid].role != "code"
            or nodes[cid].metadata.get("tool_call_id") is None or cid in keep]
