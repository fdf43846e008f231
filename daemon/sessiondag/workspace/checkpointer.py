"""The workspace checkpoints of one process's sessions: a Snapshotter per working dir, kept warm.

`Snapshots(settings)` is what rpc/ and cli/ install on a SessionStore (`snapshots=`, the store's
`SnapshotSource`): called with a session, it returns the Snapshotter of the session's working dir
(its stat cache in `<session dir>/workspace.cache`), or None when checkpoints are off or the session
has no working dir. The daemon's watcher feeds `mark_dirty` / `lost_events` / `set_watching`.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Iterable, Protocol

from ..core.checkpoint import CheckpointOwner
from ..core.settings import Settings
from .snapshot import Limits, Snapshotter

CACHE_NAME = "workspace.cache"


class StoreLike(Protocol):
    """What `install` uses of a `SessionStore`."""

    @property
    def state_dir(self) -> str: ...

    @property
    def settings(self) -> Callable[[], Settings]: ...

    def set_snapshots(self, source: "Snapshots") -> None: ...


def limits_of(settings: Settings) -> Limits:
    return Limits(settings.max_file_bytes, settings.max_snapshot_bytes, settings.snapshot_budget_s,
                  settings.beneath)


class Snapshots:
    def __init__(self, settings: Callable[[], Settings], exclude: Iterable[str] = ()):
        self.settings = settings
        self.exclude = tuple(os.path.abspath(x) for x in exclude)   # never inside a snapshot (the state dir)
        self._by_sid: dict[str, Snapshotter] = {}
        self._mutex = threading.Lock()
        self.watched: frozenset[str] = frozenset()   # working dirs a watcher reports every change of
        self.barrier: Callable[[], bool] | None = None

    def __call__(self, session: CheckpointOwner) -> Snapshotter | None:
        settings = self.settings()
        wd = session.info.get("working_dir")
        if not settings.checkpoints or not isinstance(wd, str) or not wd or not os.path.isdir(wd):
            return None
        with self._mutex:
            snap = self._by_sid.get(session.id)
            if snap is None or snap.root != os.path.abspath(wd):
                snap = self._by_sid[session.id] = Snapshotter(
                    wd, os.path.join(session.path, CACHE_NAME), limits_of(settings), self.exclude)
                snap.watching, snap.barrier = snap.root in self.watched, self.barrier
            else:
                snap.limits = limits_of(settings)
            return snap

    def get(self, sid: str) -> Snapshotter | None:
        with self._mutex:
            return self._by_sid.get(sid)

    def forget(self, sid: str) -> None:
        with self._mutex:
            self._by_sid.pop(sid, None)

    def mark_dirty(self, sid: str, rels: Iterable[str]) -> None:
        snap = self.get(sid)
        if snap is not None:
            snap.mark_dirty(rels)

    def on_watching(self, dirs: frozenset[str]) -> None:
        """The watcher (re)started over `dirs`: changes may have gone unseen meanwhile, so every
        snapshotter walks next time; those under the watch may trust their dirty marks after that."""
        with self._mutex:
            self.watched = frozenset(os.path.abspath(d) for d in dirs)
            snaps = list(self._by_sid.values())
        for snap in snaps:
            snap.watching, snap.barrier = snap.root in self.watched, self.barrier
            snap.lost_events()

    def sync(self, session: CheckpointOwner) -> None:
        """Before a turn's commit (outside the session lock): let the watcher catch up."""
        snap = self.get(session.id)
        if snap is not None:
            snap.sync()


def install(store: StoreLike) -> Snapshots:
    """Workspace checkpoints for every session `store` (a SessionStore) loads; its state dir stays out."""
    snaps = Snapshots(store.settings, exclude=[store.state_dir])
    store.set_snapshots(snaps)
    return snaps
