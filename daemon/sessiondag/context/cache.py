"""Per-session render caches: the last walked chain and each anchor's admitted subtree.

Everything cached is derived from immutable facts (predecessor edges never change) or is dropped
when the session reports a change that touches it (the store's listener events, store/events.py:
every append/update it applies, its own and other processes'). A reloaded graph resets the cache.
"""

from __future__ import annotations

import threading
from typing import Any

from ..core.graph import Graph
from ..core.model import ROOT, Call
from ..store.events import Event, NodeAppended, NodeUpdated
from ..store.session import Session
from .graphinfo import SYSTEM_PROMPT_NAME, RenderError, anchor_of, is_anchor, is_tool_call
from .per_session import PerSession
from .prefix import NodeMemo

# a prefix memo's key: (expose default, the active summary's id, the chain positions it covers)
MemoKey = tuple[str, str | None, tuple[int, int] | None]


class RenderCache:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.version = 0                         # bumped by every append/update the session reports
        self.lock = threading.Lock()             # one render at a time (the listener never takes it)
        self.spine: list[Call] = []              # the last walked raw chain, start → tip
        self.spine_pos: dict[str, int] = {}      # node id -> index in self.spine
        self.prompt_pos: list[int] = []          # indexes of context/system_prompt nodes in self.spine
        self.subtrees: dict[str, dict[str, tuple[list[Call], int]]] = {}  # anchor -> expose default -> (nodes, max seq)
        # node id -> key -> rendered piece; a slot's type is its key's (the module that writes a key
        # reads it back: the system prompt's text, messages.py's wire fragments)
        self.fragments: dict[str, dict[tuple[str | int | bool, ...], Any]] = {}
        self.memos: dict[MemoKey, NodeMemo] = {}                         # prefix.NodeMemo per policy key
        self._inner_callers: set[str] | None = None   # see inner_callers

    def inner_callers(self) -> set[str]:
        """The ids of the nodes that call a node that is not a chain node of its own (a tool call,
        a function, a function's inner call): only their renders walk their caller subtrees; any
        other node admits itself alone (a chat's user node calling its replies, as the runtime
        writes them). Built on first use in one pass over the nodes (cheaper than the graph's
        callee lists, which a long chat's render then never needs), kept up to date by on_events.
        May hold more ids than that (a node that stopped being a tool call): such a node is
        rendered through its subtree, which gives the same."""
        got = self._inner_callers
        if got is None:
            g = self.graph
            got = set()
            add = got.add
            for c in g.nodes.values():
                if c.predecessor is None:
                    if not c.is_spawn_root:
                        add(c.caller)
                elif c.role == "code" and is_tool_call(g, c):
                    add(c.caller)
            self._inner_callers = got
        return got

    # --- invalidation ------------------------------------------------------------------------
    def on_events(self, session: Session, events: list[Event]) -> None:
        g = self.graph
        if session.loaded_graph is not g:
            return
        for ev in events:
            if isinstance(ev, NodeAppended):
                nid = ev.node_id
                updated = False
            elif isinstance(ev, NodeUpdated):
                nid = ev.node_id
                updated = True
                self.fragments.pop(nid, None)
            else:
                continue
            self.version += 1
            c = g.nodes.get(nid)
            if c is None:
                continue
            if self._inner_callers is not None and not is_anchor(g, c):
                self._inner_callers.add(c.caller)
            try:
                a = anchor_of(g, c)
            except RenderError:
                self.subtrees.clear()
                self._invalidate_from(0)
                continue
            self.subtrees.pop(a, None)
            p = self.spine_pos.get(a)
            if p is not None:
                self._invalidate_from(p)
            elif c.name == "context/summary" or (a in g.nodes and g.nodes[a].name == "context/summary"):
                self._invalidate_from(0)
            if updated:
                # a changed node may change how its caller renders it (status, expose, output)
                self.fragments.pop(c.caller, None)

    # --- the chain walk ----------------------------------------------------------------------
    def walk(self, head_id: str) -> list[Call]:
        """The raw chain from its start to `head_id` (same rules as Graph.get_branch), reusing the
        part it shares with the last walk. Returns the cache's own list: do not mutate it."""
        g = self.graph
        if head_id == ROOT:
            self._truncate(0)
            return self.spine
        pos = self.spine_pos
        nodes = g.nodes
        node: Call | None = g.get(head_id)
        new: list[Call] = []
        while node is not None and node.id not in pos:
            new.append(node)
            p = node.predecessor
            nxt = nodes.get(p) if p is not None and p != ROOT else None
            # the common step inline; anything else (a branch start, broken data) as Graph.get_branch does
            node = nxt if nxt is not None and nxt.seq < node.seq else g.step_back(node)
        self._truncate(0 if node is None else pos[node.id] + 1)
        spine = self.spine
        base = len(spine)
        new.reverse()
        spine.extend(new)
        pos.update(zip([c.id for c in new], range(base, base + len(new))))
        self.prompt_pos.extend(base + i for i, c in enumerate(new) if c.name == SYSTEM_PROMPT_NAME)
        return spine

    def _invalidate_from(self, p: int) -> None:
        for memo in self.memos.values():
            if memo.valid_upto > p:
                memo.valid_upto = p

    def _truncate(self, keep: int) -> None:
        spine, pos = self.spine, self.spine_pos
        self._invalidate_from(keep)
        if keep >= len(spine):
            return
        if keep == 0:
            spine.clear()
            pos.clear()
            self.prompt_pos.clear()
            return
        for c in spine[keep:]:
            del pos[c.id]
        del spine[keep:]
        pp = self.prompt_pos
        while pp and pp[-1] >= keep:
            pp.pop()


_caches: PerSession[RenderCache] = PerSession(RenderCache)


def cache_for(session: Session) -> RenderCache:
    """The render cache of a store Session (created on first use, reset when the graph reloads)."""
    return _caches.get(session)


def drop_cache(session: Session) -> None:
    """Forget the render cache of `session` (the next render builds a new one, cold)."""
    _caches.drop(session)


def cache_count() -> int:
    """How many render caches are alive (daemon/status `tables.render_caches`)."""
    return len(_caches)
