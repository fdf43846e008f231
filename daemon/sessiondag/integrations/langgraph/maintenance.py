"""Thread maintenance of SessiondagSaver: delete_thread, delete_for_runs, copy_thread, prune.

History is the point of the store: `prune(keep_latest)` and `delete_for_runs` mark checkpoints
hidden (`metadata.langgraph_hidden`; they leave get_tuple/list but stay on the DAG and in git);
`delete_thread` and `prune(strategy="delete")` delete the session. `copy_thread` replays a thread's
nodes into a new session.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, overload

import orjson

from ... import ROOT, Call
from ...store import Session
from .. import threads
from .index import HIDDEN, META_KEY, PREFIX, SUBGRAPH_SOURCE

if TYPE_CHECKING:
    from ...store import SessionStore
    from .index import ThreadIndex

_BLOB = re.compile(rb'"\$blob":"([0-9a-f]{40})"')


class Threads(Protocol):
    """What the maintenance uses of the saver that owns it (its store, its threads' sessions and
    indexes, and forgetting a deleted thread's cached state)."""

    @property
    def store(self) -> SessionStore: ...
    @overload
    def session_for(self, thread_id: str, *, create: Literal[True]) -> Session: ...
    @overload
    def session_for(self, thread_id: str, *, create: bool = False) -> Session | None: ...
    def session_for(self, thread_id: str, *, create: bool = False) -> Session | None: ...
    def index_of(self, s: Session) -> ThreadIndex: ...
    def forget(self, sid: str) -> None: ...


class ThreadMaintenance:
    """Owned by a SessiondagSaver, which hands it its `Threads` side and forwards the maintenance
    methods of LangGraph's checkpointer API to it."""

    def __init__(self, threads: Threads):
        self.threads = threads

    def delete_thread(self, thread_id: str) -> None:
        sid = threads.session_id_for(PREFIX, str(thread_id))
        self.threads.forget(sid)
        self.threads.store.reset_session(sid)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        runs = set(run_ids)
        if not runs:
            return
        for _tid, s in threads.each(self.threads.store, PREFIX, META_KEY):
            with s.lock:
                idx = self.threads.index_of(s)
                self._hide(s, [nid for _, _, nid in idx.visible() if idx.lg[nid].get("run_id") in runs])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        src = self.threads.session_for(source_thread_id)
        if src is None:
            return
        _copy_nodes(src, self.threads.session_for(target_thread_id, create=True))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy == "delete":
            for tid in thread_ids:
                self.delete_thread(tid)
            return
        if strategy != "keep_latest":
            raise ValueError(f"unknown prune strategy {strategy!r}; expected 'keep_latest' or 'delete'")
        for tid in thread_ids:
            s = self.threads.session_for(tid)
            if s is None:
                continue
            with s.lock:
                seen: set[str] = set()
                drop = []
                for ns, _cid, nid in self.threads.index_of(s).visible():  # newest first: the first per ns stays
                    if ns in seen:
                        drop.append(nid)
                    seen.add(ns)
                self._hide(s, drop)

    def _hide(self, s: Session, node_ids: list[str]) -> None:
        if not node_ids:
            return
        with s.batched():
            for nid in node_ids:
                s.update(nid, metadata={HIDDEN: True})
        s.commit_turn(f"langgraph: {len(node_ids)} checkpoint(s) pruned (kept in history)\n")



def _copy_nodes(src: Session, dst: Session) -> None:
    """Replay src's LangGraph nodes into dst: same ids, kinds and blob references (bodies copied,
    content-addressed); subgraph spawn roots re-created with spawn_branch (new ids, remapped)."""
    with src.lock:
        nodes = [c for c in src.graph.nodes.values() if c.id != ROOT]
        picked = [c for c in nodes if "langgraph" in c.metadata or
                  (c.metadata.get("spawn_branch_root") and c.metadata.get("source") == SUBGRAPH_SOURCE)]
        blobs = {m.decode() for c in picked for m in _BLOB.findall(orjson.dumps(c.metadata))}
        bodies = {sha: src.load_blob(sha) for sha in blobs}
    with dst.lock:
        for data in bodies.values():
            dst.put_blob(data)
        ids = {ROOT: ROOT}
        taken = dst.graph.nodes
        with dst.batched():
            for c in picked:
                caller = ids.get(c.caller, c.caller)
                if c.metadata.get("spawn_branch_root"):
                    ids[c.id] = dst.spawn_branch(caller, source=c.metadata["source"], content=c.output)
                    continue
                pred = c.predecessor if c.predecessor in (None, ROOT) else ids.get(c.predecessor, c.predecessor)
                copy = Call(c.role, c.name, input=c.input, output=c.output, caller=caller, predecessor=pred,
                            status=c.status, metadata=orjson.loads(orjson.dumps(c.metadata)))
                if c.id not in taken:
                    copy.id = c.id
                ids[c.id] = dst.append(copy).id
        dst.commit_turn(f"langgraph: copied from thread {src.graph.extra.get('langgraph.thread_id')!r}\n")
