"""A turn commit (`Session.commit_turn`, `Session.record_checkpoint`): what folds the records since
the last snapshot into one git commit. Under the session lock, caught up with disk and with other
processes' commits: the write policy recorded before any hook runs, the commit hooks' meta, the
turn's workspace checkpoint (recorded on its opener, the turn's user node), then the snapshot — its
parent the last commit, a second parent for a merged remote history — and a rotation of a large
journal. Nothing in memory moves until the commit is durable and named. See docs/storage.md.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Protocol

from ..core.checkpoint import NODE_KEY, UNDO_KEEP, UNDO_KEY
from ..core.graph import Graph
from ..core.settings import Settings, WritePolicy
from . import checkpoints
from .catch_up import CatchUp
from .events import Listeners, TurnCommitted
from .faults import rotate_journal
from .gitstore import GitSnapshots
from .journal import Journal
from .snapshot import describe_turn, snapshot_meta, turn_chunk

Taken = tuple[str | None, dict[str, object]]
"""A workspace snapshot already stored (checkpoints.take, outside the lock): (checkpoint id, summary)."""


class Session(Protocol):
    """What a turn commit uses of its session (store/session.py's Session)."""
    id: str
    path: str
    info: dict[str, Any]
    schema_version: int
    journal: Journal
    git: GitSnapshots
    catch_up: CatchUp
    listeners: Listeners
    settings: Callable[[], Settings]
    commit_hooks: list[Callable[[Graph], Mapping[str, object]]]
    snapshots: checkpoints.SnapshotSource | None
    pending_checkpoint: str | None  # the checkpoint the next commit names (baseline, undo point)

    def write_record(self, rec: dict[str, Any]) -> dict[str, Any]: ...
    def recorded_policy(self, settings: Settings | None = None) -> WritePolicy: ...
    def commit_turn(self, message: str | None = None) -> str | None: ...


def commit(s: Session, message: str | None = None, *, merge_parent: bytes | None = None,
           checkpoint: bool = False, opener: str | None = None, taken: Taken | None = None) -> str | None:
    """Fold everything since the last snapshot into one git commit. None if nothing changed.
    `merge_parent`: a second parent the commit records (a merged remote history: sync/merge.py).
    `checkpoint`: a turn's commit (the agent loop's) also snapshots the working dir, recorded on
    `opener` (the turn's user node; default: the one among the nodes since the last commit —
    a commit in between, the snapshot before the first turn's, may have taken it). `taken`: that
    snapshot already stored (checkpoints.take outside the lock), else it is taken here."""
    with s.journal.locked():
        cu = s.catch_up
        cu.sync_commit()
        if cu.damage is not None:
            raise cu.damage.error(s.id)
        owed = checkpoint and opener is not None and opener in cu.current.nodes and \
            NODE_KEY not in (cu.current.nodes[opener].metadata or {})
        if not cu.open_turn and not owed:
            return None
        settings = s.settings()
        s.recorded_policy(settings)  # recorded before any hook runs: the aging hook reads its tail
        for hook in tuple(s.commit_hooks):
            for key, value in hook(cu.current).items():
                if cu.current.extra.get(key) != value:
                    s.write_record({"m": key, "v": value})
        workspace = _turn_checkpoint(s, settings, opener, taken) if checkpoint else s.pending_checkpoint
        g = cu.current
        chunk, blob_ids = turn_chunk(g, cu.dirty)
        parent = cu.committed
        turn = cu.turn + 1  # nothing in memory changes until the commit is durable and named
        usage = (g.usage_total[0], g.usage_total[1])
        meta = snapshot_meta(g, schema_version=s.schema_version, session_id=s.id, info=s.info,
                             turn=turn, usage_previous=cu.usage_at_commit,
                             journal_id=s.journal.journal_id, journal_offset=s.journal.offset)
        msg = message or describe_turn(g, cu.turn_new, turn)
        s.git.pack_compression = settings.pack_compression
        sha = s.git.commit(meta, chunk, turn, blob_ids, msg, parent, merge_parent, workspace)
        s.pending_checkpoint = None
        cu.committed_turn(sha, turn, usage)
        if s.journal.size() > settings.journal_rotate_bytes:
            rotate_journal(s, s.schema_version)
        if s.listeners:
            s.listeners.publish(s, [TurnCommitted(sha.decode(), turn)])
        return sha.decode()


def _turn_checkpoint(s: Session, settings: Settings, opener: str | None = None,
                     taken: Taken | None = None) -> str | None:
    """The checkpoint this commit names: a turn's own snapshot, recorded on its user node
    (store/checkpoints.py), else one recorded since the last commit. Caller holds the lock."""
    opener = opener or checkpoints.turn_opener(s.catch_up.current, s.catch_up.turn_new)
    if opener is None or s.snapshots is None:
        return s.pending_checkpoint
    ck, summary = taken or checkpoints.take(s, settings.pack_compression)
    s.write_record({"u": opener, "f": {"metadata": {NODE_KEY: summary}}})
    return ck or s.pending_checkpoint


def record_checkpoint(s: Session, key: str, extra: Mapping[str, object] | None = None,
                      taken: tuple[str, dict[str, object]] | None = None) -> dict[str, object] | None:
    """Snapshot the working dir now and keep it as session meta `key` (BASELINE_KEY: the one
    snapshot before the first turn; UNDO_KEY: appended to the restores' undo points), in a commit
    of its own. `taken`: a snapshot already stored (id, summary). None without checkpoints."""
    with s.journal.locked():
        s.catch_up.sync_commit()
        if s.snapshots is None:
            return None
        ck, summary = taken or checkpoints.take(s, s.settings().pack_compression)
        if ck is None:
            return summary
        summary = {**summary, **(extra or {}), "at": time.time()}
        if key == UNDO_KEY:
            kept = list(s.catch_up.current.extra.get(UNDO_KEY) or [])[-(UNDO_KEEP - 1):]
            s.write_record({"m": key, "v": kept + [summary]})
        else:
            s.write_record({"m": key, "v": summary})
        s.pending_checkpoint = ck
        s.commit_turn(f"workspace checkpoint: {key}")
        return summary
