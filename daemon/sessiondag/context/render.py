"""render_context: which nodes an LLM call sees, in which order.

The rule: a node is rendered iff its anchor — the nearest node walking caller edges upward that is a
chain node of its own (has a predecessor, or is a spawn root; tool-call nodes belong to their owning
llm node instead) — lies on the predecessor chain of the head, after segment substitution, and the
frame/expose rules admit it. ROOT is never expanded. seq orders the result; it never selects
(except for the two explicit cuts: a frame renders only pre-frame history outside itself, and a
replayed manifest renders the graph as of its `last_seq`).

Pure: reads the session, writes nothing (the in-memory render cache aside). Raises on broken data.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from ..core.graph import Graph
from ..core.model import ROOT, Call
from ..store.session import Session
from . import prefix
from .admission import Walk, admit, cached_subtree
from .aging import Manifest, check_manifest, current_manifest
from .cache import RenderCache, cache_for
from .stored import meta_has
from .graphinfo import CONTEXT_PREFIX, RenderError, anchor_of, is_anchor, is_hidden_context, is_summary, is_tool_call

_seq = attrgetter("seq")


@dataclass
class RenderedContext:
    head_id: str
    frame: str | None
    nodes: list[Call]
    system_prompt: str | None
    manifest: Manifest
    open_ids: frozenset[str] = frozenset()   # the frame node and its calling functions (still running)
    system_prompt_id: str | None = None
    _cache: RenderCache | None = field(default=None, repr=False, compare=False)
    # (NodeMemo, generation, positions, rest): the memo's first `positions` chain positions, then `rest`
    _memo: tuple[prefix.NodeMemo, int, int, Sequence[Call]] | None = field(default=None, repr=False, compare=False)


def render_context(session: Session, head_id: str | None = None, *, frame: str | None = None,
                   manifest: Manifest | None = None, encode: bool = False,
                   fast: bool = True) -> RenderedContext:
    """The context of a call at `head_id` (default: HEAD) in `frame` (a code node id; None = top
    level). With a `manifest` (a past call's), render exactly as then; its head_id/frame apply when
    the arguments leave them out. `encode`: OpenAI messages will be encoded from it (render_bytes):
    nodes first read here note theirs as their lines are read (prefix.extend). `fast=False`: the
    reference path (context/renderer.py) — no prefix memo, nothing answered from stored lines."""
    cache = cache_for(session)
    if manifest is not None and isinstance(manifest, dict):
        head_id = head_id if head_id is not None else manifest.get("head_id")
        frame = frame if frame is not None else manifest.get("frame")
    if head_id is None:
        head_id = cache.graph.head_id  # before the manifest: a concurrent append only adds later seqs
    m = dict(current_manifest(session) if manifest is None else check_manifest(manifest))
    with session.lock, cache.lock:  # lock order everywhere: session lock, then cache lock
        return _render(session, cache, head_id, frame, m, encode, fast)


def _render(session: Session, cache: RenderCache, head_id: str | None, frame: str | None,
            m: Manifest, encode: bool = False, fast: bool = True) -> RenderedContext:
    g = cache.graph
    last_seq = m["last_seq"]
    head = g.head_id if head_id is None else head_id
    head_node = g.get(head)
    if head_node.seq > last_seq:
        raise RenderError(f"head is newer than the manifest's last_seq {last_seq}", head)
    if head != ROOT and not (head_node.predecessor is not None or head_node.is_spawn_root):
        raise RenderError("the head must be a chain node", head)
    raw = cache.walk(head)

    # the pinned system prompt: the latest context/system_prompt node on the raw chain
    prompt_text = prompt_id = None
    for i in reversed(cache.prompt_pos):
        p = raw[i]
        if p.seq <= last_seq:
            prompt_id = p.id
            per = cache.fragments.get(p.id)
            prompt_text = per.get(("system",)) if per is not None else None
            if prompt_text is None:
                prompt_text = session.full_value(p.output)  # a spilled prompt ships in full
                if not isinstance(prompt_text, str):
                    raise RenderError("a context/system_prompt node must carry its text as output", p.id)
                cache.fragments.setdefault(p.id, {})[("system",)] = prompt_text
            break

    summary, cov = _substitute(g, raw, cache.spine_pos, m["summary"], last_seq)
    m["head_id"] = head
    m["frame"] = frame

    w = Walk(g, m["expose_default"], last_seq, cache.spine_pos)
    use_memo = USE_PREFIX_MEMO and fast
    if use_memo and frame is None and last_seq == g.last_seq:
        memo = _extend_memo(cache, w, raw, summary, cov, encode)
        if not memo.ok or memo.ok[-1]:
            m["spilled"] = list(memo.spilled)
            return RenderedContext(head, frame, list(memo.nodes), prompt_text, m, frozenset(), prompt_id,
                                   cache, (memo, memo.generation, memo.n, ()))
    spine = raw if summary is None or cov is None else raw[:cov[0]] + [summary] + raw[cov[1]:]
    frame_anchor = None
    if frame is not None:
        w.frame, w.open_ids, frame_anchor = _open_frame(g, frame, cache.spine_pos, cov, last_seq)
        if use_memo and last_seq == g.last_seq:
            hit = _frame_from_memo(cache, w, raw, summary, cov, frame_anchor)
            if hit is not None:
                memo, a, rest = hit
                nodes = memo.nodes[:memo.ends[a - 1]] + rest
                m["spilled"] = memo.spilled[:memo.sp_ends[a - 1]] + [c.id for c in rest if meta_has(c, "spilled")]
                return RenderedContext(head, frame, nodes, prompt_text, m, w.open_ids, prompt_id, cache,
                                       (memo, memo.generation, a, rest))

    nodes = _collect(cache, w, [x for x in spine if x is not summary], frame_anchor)
    if summary is not None and cov is not None:
        nodes.insert(bisect_left(nodes, raw[cov[0]].seq, key=_seq), summary)

    has = meta_has if fast else _in_metadata
    m["spilled"] = [c.id for c in nodes if has(c, "spilled")]
    return RenderedContext(head, frame, nodes, prompt_text, m, w.open_ids, prompt_id, cache)


def _in_metadata(c: Call, key: str) -> bool:
    return key in c.metadata


def _collect(cache: RenderCache, w: Walk, anchors: list[Call], frame_anchor: str | None) -> list[Call]:
    """The admitted nodes under these chain nodes, in seq order (the plain path)."""
    g = w.graph
    nodes: list[Call] = []
    for x in anchors:
        if x.seq > w.last_seq:
            continue
        if w.frame is not None and x.seq > w.frame.seq and x.id != frame_anchor:
            continue
        if is_tool_call(g, x):
            # rendered with its owning llm node (or, owner covered by the summary, not at all)
            if x.caller not in cache.spine_pos:
                raise RenderError("a tool-call node on the chain has its owning llm node off the chain", x.id)
            continue
        if w.frame is None or (x.id != frame_anchor):
            sub = cached_subtree(cache, w, x)
            if w.frame is not None and sub[1] >= w.frame.seq:
                sub = (admit(w, x), 0, False)
            nodes.extend(sub[0])
        else:
            nodes.extend(admit(w, x))
    nodes.sort(key=_seq)
    return nodes


def _frame_from_memo(cache: RenderCache, w: Walk, raw: list[Call], summary: Call | None,
                     cov: tuple[int, int] | None,
                     frame_anchor: str) -> tuple[prefix.NodeMemo, int, list[Call]] | None:
    """An in-frame render reuses the top-level memo for the chain positions before the frame's
    anchor when they end before it in seq order: (memo, positions, the rest in seq order) or None."""
    a = cache.spine_pos[frame_anchor]
    if a == 0 or (cov is not None and cov[0] >= a):
        return None
    top = Walk(w.graph, w.expose_default, w.last_seq, w.spine_pos)
    memo = _extend_memo(cache, top, raw, summary, cov)
    if not (memo.ok[a - 1] and memo.gstart[a] == a and memo.cum_max[a - 1] < raw[a].seq):
        return None
    return memo, a, _collect(cache, w, raw[a:], frame_anchor)


MAX_MEMOS = 4
USE_PREFIX_MEMO = True  # tests switch it off to check both paths render the same bytes


def _extend_memo(cache: RenderCache, w: Walk, raw: list[Call], summary: Call | None,
                 cov: tuple[int, int] | None, encode: bool = False) -> prefix.NodeMemo:
    key = (w.expose_default, summary.id if summary is not None else None, cov)
    memo = cache.memos.get(key)
    if memo is None:
        while len(cache.memos) >= MAX_MEMOS:
            cache.memos.pop(next(iter(cache.memos)))
        memo = cache.memos[key] = prefix.NodeMemo()
    g = w.graph
    inner = cache.inner_callers()  # the nodes whose callees do not all render on their own

    def chunk_at(p: int) -> Call | prefix.Chunk:
        x = raw[p]
        if cov is not None and cov[0] <= p < cov[1]:
            if p == cov[0] and summary is not None:
                return [summary], x.seq, x.seq, False, True
            return [], None, None, False, False
        if x.role != "code" and x.id not in inner:  # a leaf: _admit would give [x] or nothing
            if is_hidden_context(x):
                return [], None, None, False, False
            return x
        if is_tool_call(g, x):
            if x.caller not in cache.spine_pos:
                raise RenderError("a tool-call node on the chain has its owning llm node off the chain", x.id)
            return [], None, None, False, False
        sub, mx, volatile = cached_subtree(cache, w, x)
        return sub, (sub[0].seq if sub else None), (mx if sub else None), volatile, False

    hidden_prefix = CONTEXT_PREFIX

    def leaves(p: int, end: int) -> list[Call]:  # the common case of chunk_at, for a run of positions
        if cov is not None:
            end = min(end, cov[0]) if p < cov[0] else (end if p >= cov[1] else p)
        out: list[Call] = []
        for i in range(p, end):  # by index: islice(raw, p, end) would step over raw[:p] every call
            x = raw[i]
            if x.role == "code" or x.id in inner or x.name.startswith(hidden_prefix):
                break
            out.append(x)
        return out

    version = cache.version
    prefix.extend(memo, len(raw), chunk_at, leaves, encode)
    if cache.version != version:  # a write landed meanwhile (another thread): trust nothing next time
        memo.valid_upto = 0
    return memo


def _substitute(g: Graph, raw: list[Call], pos: dict[str, int], sid: str | None,
                last_seq: int) -> tuple[Call | None, tuple[int, int] | None]:
    """Segment substitution: [summary, kept tail…] when the chain holds the whole covered segment."""
    if sid is None:
        return None, None
    s = g.nodes.get(sid)
    if s is None or not is_summary(s):
        raise RenderError("the active summary is missing or is not a context/summary node", sid)
    if s.seq > last_seq:
        raise RenderError("the manifest's summary is newer than its last_seq", sid)
    covers = s.metadata.get("covers_ids")
    if not isinstance(covers, list) or not covers or not all(isinstance(i, str) for i in covers):
        raise RenderError("a summary must carry metadata.covers_ids (a non-empty list of node ids)", sid)
    first, last = pos.get(covers[0]), pos.get(covers[-1])
    if first is None or last is None:
        return None, None  # another chain (or only part of the segment): render raw
    end = first + len(covers)
    if last != end - 1 or [c.id for c in raw[first:end]] != covers:
        raise RenderError("covers_ids is not a contiguous run of this chain", sid)
    if s.predecessor != raw[first].predecessor:
        raise RenderError("a summary's predecessor must be that of the first node it covers", sid)
    return s, (first, end)


def _open_frame(g: Graph, frame: str, pos: dict[str, int], cov: tuple[int, int] | None,
                last_seq: int) -> tuple[Call, frozenset[str], str]:
    f = g.get(frame)
    if f.role != "code":
        raise RenderError("a frame must be a code node", frame)
    if f.seq > last_seq:
        raise RenderError("the frame is newer than the manifest's last_seq", frame)
    opened: list[str] = []
    c = f
    while not is_anchor(g, c):
        if c.role == "code":
            opened.append(c.id)
        if c.caller == ROOT:
            raise RenderError("the frame hangs on ROOT without a chain node", frame)
        c = g.caller_of(c)
    anchor = c.id
    if c.role == "code":
        opened.append(c.id)  # a function on the chain that (indirectly) called the frame
    at = pos.get(anchor)
    if at is None or (cov and cov[0] <= at < cov[1]):
        raise RenderError("the frame does not belong to the rendered chain", frame)
    return f, frozenset(opened), anchor



def root_level_ancestor(g: Graph, c: Call) -> str:
    """Walk caller edges up to the node that hangs on ROOT (or a spawn root). For tests and views."""
    while c.caller != ROOT and not c.is_spawn_root:
        c = g.caller_of(c)
    return c.id


__all__ = ["RenderedContext", "RenderError", "render_context", "anchor_of", "root_level_ancestor"]
