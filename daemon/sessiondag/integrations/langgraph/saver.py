"""`SessiondagSaver`: a LangGraph checkpointer whose threads are sessiondag sessions.

Mapping (docs/integrations.md):
- thread_id -> one session (`lg-<thread_id>`, meta `langgraph.thread_id`);
- checkpoint -> a `code` node named `checkpoint` (its id is the checkpoint id when free); in the root
  namespace caller ROOT and predecessor = the parent checkpoint's node, so a put from an older
  checkpoint (time travel, update_state, fork) is a real fork on the session DAG;
- a subgraph namespace -> a spawn branch whose caller is the parent graph's checkpoint node
  (`metadata.parents`), holding that namespace's checkpoints as its chain;
- put_writes -> a `code` node `writes:<task>` called by the checkpoint node;
- channel values and writes -> content-addressed blobs (values.py); growing lists as deltas.
prune / delete_for_runs mark checkpoints hidden (the nodes stay in the DAG and in git);
delete_thread and prune(strategy="delete") delete the session.
"""

from __future__ import annotations

import atexit
import base64
import os
import random
import threading
import time
import weakref
from collections.abc import AsyncIterator, Collection, Iterator, Sequence
from typing import Any, Callable, Literal, TypeVar, cast, overload

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ... import ROOT, Call
from ...core.errors import SessionDeletedError, StorageError
from ...core.settings import Settings
from ...store import Session, SessionStore
from .. import threads
from .index import HIDDEN, META_KEY, PREFIX, ThreadIndex
from .maintenance import ThreadMaintenance
from .placement import anchor, parent_ns, place
from .values import LastList, ValueCodec, preview_or_none

_SIMPLE = (str, int, float, bool, type(None))
T = TypeVar("T")
ARRIVAL_WAIT = 5.0   # seconds a put waits for the checkpoint it hangs on (see _await_checkpoint)


class SessiondagSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpointer on a sessiondag store.

    `store`: a SessionStore, a state directory, or None for the default ($SESSIONDAG_HOME …);
    `settings`: a store built here keeps them (default: the process's, resolved once, now).
    `commit_every`: fold the journal into one git commit every n puts (and on `commit()` / `close()`;
    0: only then). Every put is durable when it returns either way (the journal is fdatasync'd).
    The async methods run inline (like InMemorySaver); `AsyncSessiondagSaver` runs them in a
    worker thread so the event loop never waits on an fsync.
    """

    def __init__(self, store: SessionStore | str | os.PathLike[str] | None = None, *,
                 serde: SerializerProtocol | None = None, commit_every: int = 32,
                 settings: Settings | None = None):
        super().__init__(serde=serde)
        self._own_store = not isinstance(store, SessionStore)
        # no commit hooks: a checkpoint chain has no user turns, so the aging boundary never moves
        # (its hook would walk the whole chain back to ROOT at every commit, for nothing)
        self.store = threads.as_store(store, settings, hooks=False)
        self.commit_every = commit_every
        self.codec = ValueCodec(self.serde)
        self._indexes: dict[str, ThreadIndex] = {}
        self._lists: dict[tuple[str, str, str], LastList] = {}
        self._writing: dict[str, Session] = {}  # thread id -> the session its writes went to (_writes_to)
        self._puts = 0
        self.maintenance = ThreadMaintenance(self)
        self._arrived = threading.Condition()
        ref = weakref.ref(self)  # commit what is pending at interpreter exit (after which the store closes)
        atexit.register(threads.commit_at_exit, ref)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> "SessiondagSaver":
        """LangGraph's compile clones the saver with a stricter serde: the clone's codec must use it
        (the clone shares the store, indexes and blob cache)."""
        clone = cast("SessiondagSaver", super().with_allowlist(extra_allowlist))  # a copy of self
        if clone is not self:
            clone.codec = ValueCodec(clone.serde, self.codec.cache)
        return clone

    # --- context manager ---------------------------------------------------------------------
    def __enter__(self) -> "SessiondagSaver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> "SessiondagSaver":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.commit()
        for idx in self._indexes.values():
            idx.close()
        self._indexes.clear()
        self._writing.clear()
        if self._own_store:
            self.store.close()

    # --- helpers -----------------------------------------------------------------------------
    @overload
    def session_for(self, thread_id: str, *, create: Literal[True]) -> Session: ...
    @overload
    def session_for(self, thread_id: str, *, create: bool = False) -> Session | None: ...

    def session_for(self, thread_id: str, *, create: bool = False) -> Session | None:
        """The session holding `thread_id` (None if it has none and `create` is false)."""
        if create:
            return threads.open_or_create(self.store, PREFIX, str(thread_id), META_KEY)
        return threads.find(self.store, PREFIX, str(thread_id))

    def index_of(self, s: Session) -> ThreadIndex:
        idx = self._indexes.get(s.id)
        if idx is None or idx.session is not s:
            if idx is not None:
                idx.close()
            idx = self._indexes[s.id] = ThreadIndex(s)
        return idx.fresh()

    def forget(self, sid: str) -> None:
        """Drop a deleted thread's index, cached lists and session."""
        idx = self._indexes.pop(sid, None)
        if idx is not None:
            idx.close()
        for key in [k for k in self._lists if k[0] == sid]:
            del self._lists[key]
        for tid in [t for t, s in self._writing.items() if s.id == sid]:
            del self._writing[tid]

    def _writes_to(self, thread_id: str) -> Session:
        """The session a put or put_writes of `thread_id` writes to: the one the last write went to
        while it is open (no look-up on disk per write: a session reset by the store is closed; one
        removed by another process fails the write, see `_on_session`), else found or created."""
        s = self._writing.get(thread_id)
        if s is None or s.closed:
            s = self._writing[thread_id] = self.session_for(thread_id, create=True)
        return s

    def _on_session(self, thread_id: str, write: Callable[[Session], T]) -> T:
        """`write(session of thread_id)`; if its directory was removed under this saver (the write
        failed, nothing of it is in the session), once more into the session created again."""
        s = self._writes_to(thread_id)
        try:
            return write(s)
        except (SessionDeletedError, StorageError, OSError) as e:
            if not isinstance(e, SessionDeletedError) and os.path.isdir(s.path):
                raise  # a failure of its own (a blob written into a removed directory fails so)
            self.store.release(s.id, s)
            self.forget(s.id)
            return write(self._writes_to(thread_id))

    def _typed(self, value: object) -> dict[str, str]:
        t, data = self.serde.dumps_typed(value)
        return {"t": t, "d": base64.b64encode(data).decode()}

    def _untyped(self, d: dict[str, str]) -> Any:
        return self.serde.loads_typed((d["t"], base64.b64decode(d["d"])))

    @staticmethod
    def _conf(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}

    # --- reads -------------------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config["configurable"]
        thread_id, ns = str(conf["thread_id"]), conf.get("checkpoint_ns", "")
        s = self.session_for(thread_id)
        if s is None:
            return None
        with s.lock:
            idx = self.index_of(s)
            cid = get_checkpoint_id(config)
            if cid:
                nid = idx.node_of(ns, cid)
            else:
                vis = idx.visible(ns)
                nid = vis[0][2] if vis else None
            return None if nid is None else self._tuple(s, idx, thread_id, nid)

    def _tuple(self, s: Session, idx: ThreadIndex, thread_id: str, nid: str) -> CheckpointTuple:
        lg = idx.lg[nid]
        ns, cid = lg["ns"], lg["id"]
        checkpoint = self._untyped(lg["cp"])
        values: dict[str, Any] = {}
        for ch, ver in checkpoint["channel_versions"].items():
            desc = idx.values.get((ns, ch, ver))
            if desc is None or desc.get("t") == "empty":
                continue
            def lookup(v: object, ch: str = ch) -> dict[str, Any] | None:
                return idx.values.get((ns, ch, v))
            value, descs = self.codec.decode_channel(s.load_blob, desc, lookup)
            values[ch] = value
            if descs is not None:  # remember it: the next put of this list stores only what is new
                self._lists[(s.id, ns, ch)] = LastList(idx, ver, list(value), descs, desc["L"]["depth"])
        merged: dict[tuple[str, int], tuple[str, str, dict[str, Any], str]] = {}
        for w in idx.writes.get((ns, cid), ()):
            for i, ch, desc in w["w"]:
                key = (w["task_id"], i)
                if i >= 0 and key in merged:
                    continue
                merged[key] = (w["task_id"], ch, desc, w["task_path"])
        order = sorted(merged, key=lambda k: writes_sort_key(merged[k][3], k[0], k[1]))
        pending = [(merged[k][0], merged[k][1], self.codec.decode(s.load_blob, merged[k][2])) for k in order]
        parent = lg.get("parent")
        return CheckpointTuple(
            config=self._conf(thread_id, ns, cid),
            checkpoint=cast(Checkpoint, {**checkpoint, "channel_values": values}),  # as it was put
            metadata=self._untyped(lg["md"]),
            parent_config=self._conf(thread_id, ns, parent) if parent else None,
            pending_writes=pending,
        )

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        if config:
            conf = config["configurable"]
            tid = str(conf["thread_id"])
            s = self.session_for(tid)
            sessions = [] if s is None else [(tid, s)]
            ns_filter, cid_filter = conf.get("checkpoint_ns"), get_checkpoint_id(config)
        else:
            sessions = list(threads.each(self.store, PREFIX, META_KEY))
            ns_filter = cid_filter = None
        before_id = get_checkpoint_id(before) if before else None
        for tid, s in sessions:
            with s.lock:
                entries = self.index_of(s).visible(ns_filter)
            for ns, cid, nid in entries:
                if cid_filter and cid != cid_filter:
                    continue
                if before_id and cid >= before_id:
                    continue
                if limit is not None and limit <= 0:
                    return
                with s.lock:
                    idx = self.index_of(s)
                    if nid in idx.hidden or nid not in idx.lg:
                        continue
                    if filter:
                        md = self._untyped(idx.lg[nid]["md"])
                        if not all(md.get(k) == v for k, v in filter.items()):
                            continue
                    tup = self._tuple(s, idx, tid, nid)
                if limit is not None:
                    limit -= 1
                yield tup

    # --- writes ------------------------------------------------------------------------------
    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions, *, _wait: bool = True) -> RunnableConfig:
        conf = config["configurable"]
        thread_id, ns = str(conf["thread_id"]), conf.get("checkpoint_ns", "")
        parent_id = conf.get("checkpoint_id")
        md = get_checkpoint_metadata(config, metadata)
        cid = checkpoint["id"]
        got = md.get("parents")
        parents = got if isinstance(got, dict) else {}
        if ns and _wait and parents.get(parent_ns(ns)):
            self._await_checkpoint(thread_id, parent_ns(ns), parents[parent_ns(ns)])

        def write(s: Session) -> None:
            with s.lock:
                idx = self.index_of(s)
                c: dict[str, Any] = dict(checkpoint)  # the Checkpoint without its channel values
                values = c.pop("channel_values")
                descs = {}
                preview: list[str] = []  # new chat messages, one line each, for readers of the DAG
                for ch, ver in new_versions.items():
                    if ch not in values:
                        descs[ch] = {"v": ver, "t": "empty"}
                        continue
                    key = (s.id, ns, ch)
                    last = self._lists.get(key)
                    if last is not None and (ns, ch, last.version) not in idx.values:
                        last = None  # remembered from a put that did not land
                    desc, last = self.codec.encode_channel(s.put_blob, values[ch], last, idx, ver)
                    descs[ch] = {"v": ver, **desc}
                    if "L" in desc:
                        added = values[ch][len(values[ch]) - len(desc["L"]["add"]):]
                        preview.extend(p for p in map(preview_or_none, added) if p)
                    if last is not None:
                        self._lists[key] = last
                    else:
                        self._lists.pop(key, None)
                lg = {"kind": "checkpoint", "ns": ns, "id": cid, "parent": parent_id, "cp": self._typed(c),
                      "md": self._typed(md), "values": descs,
                      "run_id": md.get("run_id") if isinstance(md.get("run_id"), str) else None}
                existing = idx.cps.get((ns, cid))
                if existing is not None:  # a checkpoint put again: its node takes the new content
                    s.update(existing, metadata={"langgraph": lg, HIDDEN: False})
                else:
                    caller, pred = place(s, idx, ns, parent_id, md)
                    node_id = cid if isinstance(cid, str) and 0 < len(cid) <= 128 and cid not in s.graph.nodes else None
                    readable = {k: v for k, v in md.items() if isinstance(v, _SIMPLE)}
                    call = Call("code", "checkpoint", input=readable,
                                output={"checkpoint_id": cid, "updated": sorted(new_versions),
                                        **({"messages": preview} if preview else {})},
                                caller=caller, predecessor=pred, metadata={"langgraph": lg})
                    if node_id:
                        call.id = node_id
                    s.append(call)
                self._puts += 1
                if self.commit_every and self._puts % self.commit_every == 0:
                    s.commit_turn(f"langgraph checkpoint {cid} ({md.get('source')} step {md.get('step')}"
                                  f"{', ns ' + ns if ns else ''})\n")
        self._on_session(thread_id, write)
        with self._arrived:
            self._arrived.notify_all()
        return self._conf(thread_id, ns, cid)

    def _await_checkpoint(self, thread_id: str, ns: str, cid: str) -> None:
        """LangGraph puts checkpoints from a background executor: a subgraph's first checkpoint or a
        task's writes may arrive while the checkpoint they hang on is still being put by another
        thread. Wait for it (not holding any session lock) up to ARRIVAL_WAIT seconds, so the caller
        edge points at it; past that (it was put by another process, or never), go on without."""
        deadline = time.monotonic() + ARRIVAL_WAIT
        with self._arrived:
            while True:
                s = self.session_for(thread_id)
                if s is not None:
                    with s.lock:
                        if self.index_of(s).cps.get((ns, cid)):
                            return
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self._arrived.wait(min(left, 0.05))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "", *, _wait: bool = True) -> None:
        conf = config["configurable"]
        thread_id, ns, cid = str(conf["thread_id"]), conf.get("checkpoint_ns", ""), conf["checkpoint_id"]
        if _wait:
            self._await_checkpoint(thread_id, ns, cid)

        def write(s: Session) -> None:
            with s.lock:
                idx = self.index_of(s)
                have = {(w["task_id"], i) for w in idx.writes.get((ns, cid), ()) for i, _, _ in w["w"]}
                out = []
                for n, (ch, value) in enumerate(writes):
                    i = WRITES_IDX_MAP.get(ch, n)
                    if i >= 0 and (task_id, i) in have:
                        continue
                    out.append([i, ch, self.codec.encode(s.put_blob, value)])
                if not out:
                    return
                owner = idx.cps.get((ns, cid))
                owner = owner or anchor(s, idx)
                lg = {"kind": "writes", "ns": ns, "checkpoint_id": cid, "task_id": task_id,
                      "task_path": task_path, "w": out}
                s.append(Call("code", f"writes:{task_path or task_id}"[:200],
                              input={"task_id": task_id, "channels": [w[1] for w in out]},
                              caller=owner, predecessor=None, metadata={"langgraph": lg}))
        self._on_session(thread_id, write)

    def get_next_version(self, current: str | int | None, channel: None = None) -> str:
        """Monotonic versions with a random tail (as InMemorySaver / SqliteSaver do): two branches
        forked from one checkpoint never mint the same version of a channel."""
        n = 0 if current is None else int(current) if isinstance(current, int) else int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"

    def commit(self) -> None:
        """Fold every open thread's pending journal records into git commits now."""
        for idx in list(self._indexes.values()):
            s = idx.session
            if self.store.exists(s.id):
                s.commit_turn(f"langgraph checkpoints of thread {s.graph.extra.get(META_KEY)!r}\n")

    # --- thread maintenance (maintenance.py) -----------------------------------------------------
    def delete_thread(self, thread_id: str) -> None:
        self.maintenance.delete_thread(thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.maintenance.delete_for_runs(run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.maintenance.copy_thread(source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.maintenance.prune(thread_ids, strategy=strategy)

    # --- async (inline) ----------------------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions, _wait=False)  # inline: never block the loop

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path, _wait=False)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)
