"""One session on disk: a durable journal of records plus git snapshots, folded into a Graph.

Write path (every mutation): take the session lock, catch up with records other processes wrote,
check the record against the graph, journal it (fdatasync), apply it. The append is durable when it
returns. `commit_turn` folds everything since the last snapshot into one git commit; a large journal
is then rotated (store/turn_commit.py). Open = load the newest snapshot, then replay the journal records it does not cover.
See docs/storage.md.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, Mapping

import orjson

from ..core.errors import HeadMismatchError, InvalidNodeError, SessionDeletedError, storage_error_from
from ..core.depth import check_encodable
from ..core.graph import Branch, Graph
from ..core.model import ROOT, Call
from ..core.paging import BranchIndex, BranchPage
from ..core.settings import Settings, WritePolicy
from .gitstore import GitSnapshots
from . import checkpoints, turn_commit
from .durable_files import write_file_atomic
from .catch_up import CatchUp
from .events import BranchSpawned, Deleted, Event, FilesRestored, Listener, Listeners, events_of
from .journal import Journal
from .faults import storage_guard
from .recovery import drop_lease, take_leases
from .replay import Damage
from .spill import spill_call, unspill
from . import write_policy

SCHEMA_VERSION = 1
JOURNAL_NAME = "journal.log"
_UNSET = object()   # update(): no output given (None is a value)

CommitHook = Callable[[Graph], Mapping[str, object]]
"""A commit hook: called by `commit_turn` under the session lock, before the snapshot is taken, with
the graph about to be committed; returns session-meta updates (key -> value) to record in that same
commit ({} = none). It must be deterministic and must not write to the session itself. The store
knows no hook of its own: the layers above install theirs (context/aging.py's `advance_aging`, which
the runtime's session_context and the daemon install; see docs/architecture.md "Layers")."""


class Session:
    """One loaded session. It composes its parts: the journal and git snapshots, `catch_up`
    (store/catch_up.py: the in-memory graph, following disk, and the window of the next turn
    commit) and `listeners` (store/events.py); its own code is the write path."""

    def __init__(self, path: str, session_id: str, info: dict[str, Any],
                 commit_hooks: list[CommitHook] | None, settings: Callable[[], Settings]):
        self.path = path
        self.settings = settings  # its store's: the frozen Settings it was built with (store/handles.py)
        self.id = session_id
        self.schema_version = SCHEMA_VERSION
        self.info = info  # session.json: schema_version, working_dir, created_at
        self.journal = Journal(os.path.join(path, JOURNAL_NAME), os.path.join(path, "lock"))
        self.git = GitSnapshots(os.path.join(path, "git"))
        self.listeners = Listeners()  # fn(session, events) for in-process observers (events.py)
        self.catch_up = CatchUp(session_id, self.journal, self.git, self.listeners, self)
        cu = self.catch_up  # its write policy (store/write_policy.py) reads the meta as caught up
        self.policy = write_policy.SessionPolicy(session_id, lambda: cu.current.extra)  # (no cycle)
        self.commit_hooks: list[CommitHook] = commit_hooks if commit_hooks is not None else []
        self._branch_index: BranchIndex | None = None  # paging index of the current graph
        self.snapshots: checkpoints.SnapshotSource | None = None  # workspace checkpoints (installed by the store)
        self.pending_checkpoint: str | None = None  # the checkpoint the next commit names (baseline, undo point)
        self.baseline: checkpoints.Background | None = None  # the first snapshot, beside the first turn

    # --- what catch_up owns, read by callers ---------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The in-memory graph, loaded lazily and refreshed when another process wrote."""
        return self.catch_up.graph

    @property
    def loaded_graph(self) -> Graph | None:
        """The graph as it is in memory now, without catching up with disk (None before the first
        load or after a dropped write). For listeners, which must not read `graph`."""
        return self.catch_up.loaded

    def refresh(self) -> bool:
        """Catch up with what other processes wrote (the listeners hear it). True if the graph was
        rebuilt from disk (a new graph object: records may have been folded away)."""
        return self.catch_up.refresh()

    def on_disk(self) -> bool:
        """Holding the session lock: is the journal this session holds open still the one at its path?"""
        return self.catch_up.on_disk()

    @property
    def turn(self) -> int:
        """Turns committed so far."""
        return self.catch_up.turn

    @property
    def damage(self) -> Damage | None:
        """The first journal record a replay refused (store/replay.py's Damage): no more writes."""
        return self.catch_up.damage

    def add_listener(self, fn: Listener) -> None:
        """Call `fn(session, events)` after every change this process makes or reads from disk."""
        self.listeners.add(fn)

    def remove_listener(self, fn: Listener) -> bool:
        """Stop calling `fn`; False if it was not listening."""
        return self.listeners.remove(fn)

    def _publish(self, events: list[Event]) -> None:
        self.listeners.publish(self, events)

    def announce_deleted(self) -> None:
        """The store removed this session's directory: tell its listeners (a `Deleted` event)."""
        self._publish([Deleted()])

    def _sync_write(self) -> Graph:
        """Catch up before a write (caller holds the lock); the graph. A session whose journal holds
        a record a replay refused takes no write (store/replay.py): nothing is acknowledged after damage."""
        cu = self.catch_up
        cu.sync()
        if cu.damage is not None:
            raise cu.damage.error(self.id)
        return cu.current

    def write_record(self, rec: dict[str, Any]) -> dict[str, Any]:
        """Journal one checked record durably and apply it. Caller holds the lock."""
        self.journal.append([rec])
        return self._apply_local(rec)

    def _apply_local(self, rec: dict[str, Any]) -> dict[str, Any]:
        self.catch_up.apply(rec)
        if self.listeners:
            self._publish(events_of(rec))
        return rec

    # --- reads -------------------------------------------------------------------------------
    @property
    def head_id(self) -> str:
        return self.graph.head_id

    @property
    def lock(self) -> Journal:
        """The session lock (`with session.lock:`): re-entrant per thread, exclusive across threads
        and processes. Hold it to read the graph consistently while other threads write."""
        return self.journal

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Hold the session lock and group-commit the writes inside: one fdatasync at the end
        covers them all. Acknowledge none of them to anyone before the block has ended."""
        with self.journal:
            try:
                with self.journal.group_sync():
                    yield
            except OSError as e:  # the group's records were unwritten again: reload from disk
                self.catch_up.drop()
                raise storage_error_from(e, "write") from e
            except SessionDeletedError:  # nothing of the group was acknowledged
                self.catch_up.drop()
                raise

    def get_node(self, node_id: str) -> Call:
        with self.journal:
            return self.graph.get(node_id)

    def get_branch(self, head_id: str | None = None) -> list[Call]:
        with self.journal:
            return self.graph.get_branch(head_id)

    def get_branch_page(self, head_id: str | None = None, *, limit: int | None = None,
                        before: str | None = None, after: str | None = None,
                        order: str = "asc") -> BranchPage:
        """A window of get_branch(head_id): see core/paging.py (cursors are node ids)."""
        with self.journal:
            g = self.graph
            idx = self._branch_index
            if idx is None or idx.graph is not g:
                idx = self._branch_index = BranchIndex(g)
            return idx.page(g.head_id if head_id is None else head_id, limit=limit, before=before,
                            after=after, order=order)

    def list_branches(self) -> list[Branch]:
        with self.journal:
            return self.graph.list_branches()

    def load_blob(self, sha: str) -> bytes:
        with self.journal.locked():
            return self.git.get_blob(sha)

    def full_value(self, value: Any) -> Any:
        """The full body of a node field, following a spill reference if there is one."""
        return unspill(value, self.load_blob)

    # --- writes ------------------------------------------------------------------------------
    @storage_guard
    def append(self, call: Call, *, expected_head: str | None = None, _spawn: bool = False,
               _name: str | None = None) -> Call:
        """Record a node durably; returns it with its id and seq. See Graph.check_append for the rules."""
        if not isinstance(call, Call):
            raise InvalidNodeError("append takes a Call")
        with self.journal.locked():
            g = self._sync_write()
            if expected_head is not None and expected_head != g.head_id:
                raise HeadMismatchError(expected_head, g.head_id)
            g.check_append(call, spawn=_spawn)
            if _name:  # a spawn root and its branch name: one record, all or nothing
                g.check_name(ROOT, _name)
            call.seq = g.last_seq + 1
            if not call.created_at:
                call.created_at = time.time()
            spill_call(call, self.git.put_blob, self.recorded_policy()["node_spill"])
            if call.status == "running":
                take_leases(self.path, [call.id])  # who owns it, before anyone can see it
            self.write_record({"a": call.to_dict(), "v": _name} if _name else {"a": call.to_dict()})
            return g.nodes[call.id]

    @storage_guard
    def append_many(self, calls: Iterable[Call]) -> list[Call]:
        """Record several nodes with one durable write (one fdatasync): all of them or none.

        Each node is checked against the graph as extended by the ones before it (so a batch can
        be a chain). If any is refused, nothing is written and the error is raised."""
        calls = list(calls)
        if not all(isinstance(c, Call) for c in calls):
            raise InvalidNodeError("append_many takes Calls")
        with self.journal.locked():
            g = self._sync_write()
            threshold = self.recorded_policy()["node_spill"]
            recs = []
            try:
                for call in calls:
                    g.check_append(call)
                    call.seq = g.last_seq + 1
                    if not call.created_at:
                        call.created_at = time.time()
                    spill_call(call, self.git.put_blob, threshold)
                    rec = {"a": call.to_dict()}
                    self.catch_up.apply(rec)
                    recs.append(rec)
                if recs:
                    take_leases(self.path, [c.id for c in calls if c.status == "running"])
                    self.journal.append(recs)
            except BaseException:
                self.catch_up.drop()  # the half-extended view: disk is unchanged, reload from it
                raise
            if self.listeners and recs:
                self._publish([e for r in recs for e in events_of(r)])
            return [g.nodes[c.id] for c in calls]

    @storage_guard
    def update(self, node_id: str, *, output: Any = _UNSET, status: str | None = None,
               metadata: dict[str, Any] | None = None) -> Call:
        """Finalize or annotate a node: set output/status, merge metadata."""
        fields: dict[str, Any] = {}
        if output is not _UNSET:
            fields["output"] = output
        if status is not None:
            fields["status"] = status
        if metadata is not None:
            fields["metadata"] = metadata
        with self.journal.locked():
            g = self._sync_write()
            g.check_update(node_id, fields)
            if "output" in fields:
                probe = Call("code", "probe", output=fields["output"])
                spill_call(probe, self.git.put_blob, self.recorded_policy()["node_spill"])
                fields["output"] = probe.output
                if probe.metadata.get("spilled"):
                    fields["metadata"] = {**fields.get("metadata", {}), "spilled": probe.metadata["spilled"]}
            self.write_record({"u": node_id, "f": fields})
            if status is not None and status != "running":
                drop_lease(self.path, node_id)
            return self.catch_up.current.nodes[node_id]

    @storage_guard
    def spawn_branch(self, caller_node_id: str, *, source: str, name: str | None = None,
                     content: Any = None) -> str:
        """Open a spawn branch: a clean-context user root whose caller is the spawning node."""
        if not isinstance(source, str) or not source:
            raise InvalidNodeError("spawn_branch needs a source")
        root = Call("user", name or "spawn", output=content, caller=caller_node_id, predecessor=None,
                    metadata={"source": source, "spawn_branch_root": True})
        with self.journal.locked():
            self.append(root, _spawn=True, _name=name)
            if self.listeners:
                self._publish([BranchSpawned(root.id, caller_node_id, source, name)])
        return root.id

    @storage_guard
    def checkout(self, head_id: str) -> None:
        with self.journal.locked():
            self._sync_write().check_checkout(head_id)
            self.write_record({"c": head_id})

    @storage_guard
    def name_branch(self, head_id: str, name: str | None) -> None:
        with self.journal.locked():
            self._sync_write().check_name(head_id, name)
            self.write_record({"n": head_id, "v": name})

    def recorded_policy(self, settings: Settings | None = None) -> WritePolicy:
        """The session's write policy (store/write_policy.py's SessionPolicy); the first write
        records this process's. Caller holds the lock, caught up."""
        return self.policy.get(self.catch_up.current.extra, settings, self.settings, self.write_record)

    @storage_guard
    def set_meta(self, key: str, value: object) -> None:
        """Session meta owned by other layers (active summary, aging boundary …); None deletes."""
        if not isinstance(key, str) or not key:
            raise InvalidNodeError("meta key must be a non-empty string")
        check_encodable(value, f"session meta {key!r}")
        with self.journal.locked():
            self._sync_write()
            self.write_record({"m": key, "v": value})

    def update_info(self, **fields: object) -> None:
        """Rewrite session.json with `fields` changed (None deletes a field): a human-readable copy
        of what other layers record in the session meta (the working dir of a rebind, the model)."""
        info = {k: v for k, v in {**self.info, **fields}.items() if v is not None}
        with self.journal.locked():
            write_file_atomic(os.path.join(self.path, "session.json"), orjson.dumps(info, option=orjson.OPT_INDENT_2))
            self.info.clear()
            self.info.update(info)

    @storage_guard
    def put_blob(self, data: bytes) -> str:
        with self.journal.locked():
            return self.git.put_blob(data)

    # --- turns (store/turn_commit.py) -------------------------------------------------------
    @storage_guard
    def commit_turn(self, message: str | None = None, *, merge_parent: bytes | None = None, checkpoint:
                    bool = False, opener: str | None = None, taken: turn_commit.Taken | None = None) -> str | None:
        """Fold everything since the last snapshot into one git commit (store/turn_commit.py)."""
        return turn_commit.commit(self, message, merge_parent=merge_parent, checkpoint=checkpoint,
                                  opener=opener, taken=taken)

    @storage_guard
    def record_checkpoint(self, key: str, extra: Mapping[str, object] | None = None,
                          taken: tuple[str, dict[str, object]] | None = None) -> dict[str, object] | None:
        """Snapshot the working dir as session meta `key`, in a commit of its own (turn_commit.py)."""
        return turn_commit.record_checkpoint(self, key, extra, taken)

    def publish_restored(self, node_id: str | None, checkpoint: str, paths: list[str]) -> None:
        """Tell the listeners the working dir was restored (rpc/checkpoints.py does it, not the store)."""
        if self.listeners:
            with self.journal.locked():
                self._publish([FilesRestored(node_id, checkpoint, paths)])

    @property
    def open_turn(self) -> bool:
        return self.catch_up.open_turn

    @property
    def turn_lock_path(self) -> str:
        """The file whose flock serializes turns across processes (runtime's TurnLock)."""
        return os.path.join(self.path, "turn.lock")

    @property
    def turn_node_ids(self) -> tuple[str, ...]:
        """Ids of the nodes appended since the last turn commit, oldest first."""
        return tuple(self.catch_up.turn_new)

    def usage(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(total, delta) token usage as (input, output) pairs; see docs/storage.md "Usage".

        total: summed over every llm node's gen_ai.usage.* metadata. delta: what the current save
        window holds — with uncommitted changes, total minus the total at the last commit (what the
        next commit_turn saves); right after a commit, what that commit saved."""
        with self.journal.locked():
            return self.catch_up.usage()

    @property
    def closed(self) -> bool:
        return self.catch_up.closed

    def close(self) -> None:
        """Settle or stop the baseline under way (outside the lock: its thread takes it), then mark the
        session closed under the lock (a late writer gets SessionClosedError) and close its files."""
        if self.baseline is not None:
            self.baseline.close()
        with self.journal:
            self.catch_up.closed = True
            self.baseline = None
        self.journal.close()
        self.git.close()


def is_journal_path(path: str) -> bool:
    """Is `path` a session's journal (the file other processes' writes change)?"""
    return os.path.basename(path) == JOURNAL_NAME
