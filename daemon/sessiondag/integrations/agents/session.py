"""`SessiondagSession`: an OpenAI Agents SDK `Session` whose history is a branch of a sessiondag session.

- `session_id` -> one session (`ag-<session_id>`, meta `agents.session_id`); the history is the chain
  from the session's HEAD back to ROOT (items.py maps items to nodes, one node per item).
- `add_items` appends the items after HEAD in one durable write (one fdatasync), under the session
  lock, which is exclusive across processes: writers in several processes interleave whole batches
  and never split the history.
- `pop_item` moves HEAD back one item: the popped node stays, as the tip of a side branch.
- `clear_session` moves HEAD to ROOT and names the old tip `agents: cleared …`: the next item starts
  a new branch from ROOT; the old history stays reachable (list_branches, editors, git log).
- A session reset or removed under the adapter starts again, empty, at the next `add_items`.
- The async methods run their work in this object's own worker thread (integrations/worker.py), one
  call at a time in the order made.
- Every add_items is durable when it returns (the journal is fdatasync'd); every `commit_every`
  add_items calls, on `clear_session`, `close()` and at interpreter exit the journal is folded into
  one git commit (`git log` of the session). 0: only on close.
"""

from __future__ import annotations

import atexit
import os
import time
import weakref
from typing import Any

from agents.items import TResponseInputItem
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from ... import ROOT, Call
from ...core.errors import SessionDeletedError
from ...core.settings import Settings
from ...store import Session, SessionStore
from .. import threads
from ..worker import Worker
from .items import call_id_of, kind_of, to_call, to_item

PREFIX = "ag-"
META_KEY = "agents.session_id"


class SessiondagSession(SessionABC):
    """`store`: a SessionStore, a state directory, or None for the default ($SESSIONDAG_HOME …).
    `settings`: a store built here keeps them (default: the process's, resolved once, now)."""

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, store: SessionStore | str | os.PathLike[str] | None = None, *,
                 session_settings: SessionSettings | dict[str, Any] | None = None, commit_every: int = 32,
                 settings: Settings | None = None):
        self.session_id = session_id
        self.session_settings = (coerce_session_settings(session_settings)
                                 if session_settings is not None else SessionSettings())
        self._own_store = not isinstance(store, SessionStore)
        self.store = threads.as_store(store, settings)
        self.commit_every = commit_every
        self._s: Session | None = None
        self._writes = 0
        self._worker = Worker("sessiondag-agents")  # the async methods' thread (integrations/worker.py)
        ref = weakref.ref(self)
        atexit.register(threads.commit_at_exit, ref)

    @property
    def session(self) -> Session:
        """The sessiondag session behind this Agents SDK session (created on first use, and again
        after it was dropped: a reset closes it, a removed directory fails the next write)."""
        s = self._s
        if s is None or s.closed:
            s = self._s = threads.open_or_create(self.store, PREFIX, self.session_id, META_KEY)
        return s

    # --- the Session protocol ----------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        return await self._worker.submit(self.get_items_sync, resolve_session_limit(limit, self.session_settings))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self._worker.submit(self.add_items_sync, items)

    async def pop_item(self) -> TResponseInputItem | None:
        return await self._worker.submit(self.pop_item_sync)

    async def clear_session(self) -> None:
        await self._worker.submit(self.clear_session_sync)

    def commit(self) -> None:
        """Fold what this session wrote since the last commit into one git commit now."""
        s = self._s
        if s is not None and self._writes and self.store.exists(s.id):
            s.commit_turn()
            self._writes = 0

    def close(self) -> None:
        self.commit()
        if self._own_store:
            self.store.close()

    # --- sync bodies -------------------------------------------------------------------------
    def _item_nodes(self, s: Session, limit: int | None = None) -> list[Call]:
        """The item nodes on HEAD's chain, oldest first (the newest `limit` when given)."""
        out: list[Call] = []
        node = None if s.head_id == ROOT else s.get_node(s.head_id)
        while node is not None and (limit is None or len(out) < limit):
            if to_item(node) is not None:
                out.append(node)
            p = node.predecessor
            nxt = None if p in (None, ROOT) else s.get_node(p)
            node = nxt if nxt is not None and nxt.seq < node.seq else None  # edges point to older nodes
        out.reverse()
        return out

    def get_items_sync(self, limit: int | None = None) -> list[TResponseInputItem]:
        if limit is not None and limit <= 0:
            return []
        s = threads.find(self.store, PREFIX, self.session_id)
        if s is None:
            return []
        with s.lock:
            return [to_item(n) for n in self._item_nodes(s, limit)]

    def add_items_sync(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        s = self.session
        try:
            self._add(s, items)
        except SessionDeletedError:  # its directory was removed under us: nothing was written
            self.store.release(s.id, s)
            self._add(self.session, items)  # into the session created again in its place
        self._writes += 1
        if self.commit_every and self._writes >= self.commit_every:
            self.commit()

    def _add(self, s: Session, items: list[TResponseInputItem]) -> None:
        """Append the items' nodes after HEAD in one durable write, all or none."""
        with s.lock:
            head = s.head_id
            chain = None
            calls: list[Call] = []
            for item in items:
                owner = None
                if isinstance(item, dict) and kind_of(item) == "result":
                    owner = next((c for c in calls if call_id_of(c) == str(item["call_id"])), None)
                    if owner is None:
                        chain = chain if chain is not None else self._item_nodes(s)
                        owner = next((c for c in reversed(chain) if call_id_of(c) == str(item["call_id"])), None)
                c = to_call(item, head, owner)
                calls.append(c)
                head = c.id
            s.append_many(calls)

    def pop_item_sync(self) -> TResponseInputItem | None:
        s = threads.find(self.store, PREFIX, self.session_id)
        if s is None:
            return None
        with s.lock:
            nodes = self._item_nodes(s, 1)
            if not nodes:
                return None
            last = nodes[0]
            s.checkout(last.predecessor or ROOT)
            return to_item(last)

    def clear_session_sync(self) -> None:
        s = threads.find(self.store, PREFIX, self.session_id)
        if s is None:
            return
        with s.lock:
            old = s.head_id
            if old == ROOT:
                return
            s.name_branch(old, f"agents: cleared {time.strftime('%Y-%m-%dT%H:%M:%S')}.{time.time_ns() % 10**9:09d}")
            s.checkout(ROOT)
            s.commit_turn("agents: session cleared (the old branch stays reachable)\n")
