"""How a session's in-memory graph follows disk (`Session.catch_up`): the first load (newest snapshot
+ the journal records it does not cover), catching up with records other processes wrote, following
their journal rotation, adopting their turn commits. It owns that graph and the window of changes
since the last turn commit (`dirty`, `meta_dirty`, `turn_new`, the turn counter and usage marks);
Session's write path (store/session.py) reads and moves them through the methods here. Every
method but the public accessors runs under the session lock. See docs/storage.md.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from ..core.errors import InvalidNodeError, SessionClosedError
from ..core.gc_pause import gc_paused
from ..core.graph import Graph
from ..core.model import ROOT, Call, call_from_record
from .events import Listeners, Reloaded, events_of
from .gitstore import GitSnapshots
from .journal import CorruptJournalError, Journal
from .replay import Damage, checked
from .snapshot import graph_from_snapshot
from .snapshot_sync import recover

log = logging.getLogger(__name__)


class CatchUp:
    def __init__(self, session_id: str, journal: Journal, git: GitSnapshots, listeners: Listeners, owner: object):
        self.id = session_id
        self.journal, self.git = journal, git
        self.listeners = listeners
        # the Session the events name, weakly: no cycle, so a released Session goes at once (what
        # is keyed on it weakly, the render caches, goes with it: context/per_session.py)
        self._owner = weakref.ref(owner)
        self._graph: Graph | None = None
        self.committed: bytes | None = None    # the last turn commit (ours or another process's)
        self.dirty: set[str] = set()           # ids of nodes created or changed since the last commit
        self.meta_dirty = False
        self.turn_new: list[str] = []          # ids appended since the last commit, oldest first
        self.turn = 0
        self.usage_at_commit: tuple[int, int] = (0, 0)
        self.usage_at_previous_commit: tuple[int, int] = (0, 0)
        self.damage: Damage | None = None      # the first journal record a replay refused: no more writes
        self.closed = False                    # Session.close: no more reads or writes through it
        self._loaded_once = False

    # --- loading and catching up -------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The in-memory graph, loaded lazily and refreshed when another process wrote."""
        if self._graph is None or self.journal.has_news():
            with self.journal.locked():
                self.sync()
        return self.current

    @property
    def current(self) -> Graph:
        """The graph as loaded (caller holds the lock, caught up: `sync()`)."""
        g = self._graph
        if g is None:
            raise InvalidNodeError("session graph not loaded")
        return g

    @property
    def loaded(self) -> Graph | None:
        """The graph as it is in memory now, without catching up with disk (None before the first
        load or after a dropped write). For listeners, which must not read `graph`."""
        return self._graph

    def drop(self) -> None:
        """Forget the in-memory graph (a write failed half-way): the next read loads it from disk."""
        self._graph = None

    def refresh(self) -> bool:
        """Catch up with what other processes wrote (the listeners hear it). True if the graph was
        rebuilt from disk (a new graph object: records may have been folded away)."""
        with self.journal.locked():
            before = self._graph
            return self.graph is not before

    def on_disk(self) -> bool:
        """Holding the session lock: is the journal this session holds open still the one at its
        path? (A rotation happens under the lock, so another inode or no file means: deleted.)"""
        return self.journal.at_path()

    @property
    def open_turn(self) -> bool:
        return bool(self.dirty or self.meta_dirty)

    def clear_window(self) -> None:
        self.dirty, self.meta_dirty, self.turn_new = set(), False, []

    def committed_turn(self, sha: bytes, turn: int, usage: tuple[int, int]) -> None:
        """Our commit of `turn` (durable and named): the window starts again."""
        self.turn = turn
        self.committed = sha
        self.usage_at_previous_commit, self.usage_at_commit = self.usage_at_commit, usage
        self.clear_window()

    def sync(self) -> None:
        """Bring the graph up to date with disk. Caller holds the lock."""
        if self.closed:    # its journal is closed: reading it again would replay it from the start
            raise SessionClosedError(self.id)
        if self._graph is None:
            self.load()
            return
        if self.journal.in_sync():  # one pread of the hint: nothing new, not rotated
            return
        if self.journal.rotated():
            if not self._follow_rotation():
                self.load()
            return
        self._replay()

    def _follow_rotation(self) -> bool:
        """Another process committed and rotated the journal. If its commit covers exactly the old
        journal, read to that journal's end (our descriptor still reads the replaced file) and
        switch to the new one: no reload. Otherwise (several rotations, later commits) False."""
        self._replay()
        if self.damage is not None:
            return True  # refused records are never folded away: stay on the damaged journal
        old = (self.journal.journal_id, self.journal.offset)
        head = self.git.head()
        if head is None:
            return False
        self.git.refresh()
        meta, _ = self.git.load_meta(head)
        if (meta["journal"]["id"], meta["journal"]["offset"]) != old:
            return False
        self.journal.close_file()
        self.journal.read_header()
        if self.journal.journal_id == old[0]:
            return False
        self._adopt_commit(head, meta)
        self.clear_window()
        self._replay()
        return True

    def load(self) -> None:
        """Load from disk: the newest snapshot, then the journal records it does not cover."""
        with gc_paused():
            self._load_all()

    def _load_all(self) -> None:
        reloaded, self._loaded_once = self._loaded_once, True
        self.journal.close_file()
        self.git.refresh()
        recover(self.git)  # a power loss with snapshots unsynced (store/snapshot_sync.py)
        self._graph = None
        self.damage = None
        self.clear_window()
        head = self.git.head()
        self.journal.read_header()
        start = None
        if head is not None:
            meta, root = self.git.load_meta(head)
            self._graph = graph_from_snapshot(meta, self.git.iter_chunks(root))
            self.git.refresh()  # unmap the packs just read: their pages would count as our RSS
            self.turn = meta["turn"]
            self._usage_marks(meta)
            jmeta = meta["journal"]
            if jmeta["id"] == self.journal.journal_id:
                start = jmeta["offset"]
        self.committed = head
        self._replay(start, reloaded=reloaded)
        if self._graph is None:
            raise InvalidNodeError("session has no ROOT")

    def _adopt_commit(self, head: bytes, meta: dict[str, Any] | None = None) -> None:
        """Another process committed a turn: take its turn counter and usage marks.

        Everything that commit covers is already in our graph (we share the journal). If it covers
        the whole journal we have read, nothing is pending here any more; otherwise the nodes we still
        hold as dirty are a superset of what changed since it, written again by our next commit."""
        if meta is None:
            self.git.refresh()
            meta, _ = self.git.load_meta(head)
        self.turn = meta["turn"]
        self._usage_marks(meta)
        self.committed = head
        jm = meta["journal"]
        if jm["id"] == self.journal.journal_id and jm["offset"] == self.journal.offset:
            self.clear_window()

    def usage(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(total, delta) token usage as (input, output) pairs (Session.usage). Caller holds the lock."""
        self.sync_commit()
        g = self.current
        total = (g.usage_total[0], g.usage_total[1])
        base = self.usage_at_commit if self.open_turn else self.usage_at_previous_commit
        return total, (total[0] - base[0], total[1] - base[1])

    def _usage_marks(self, meta: dict[str, Any]) -> None:
        total, previous = meta["usage_total"], meta.get("usage_previous", (0, 0))
        self.usage_at_commit = (int(total[0]), int(total[1]))
        self.usage_at_previous_commit = (int(previous[0]), int(previous[1]))

    def sync_commit(self) -> None:
        """Catch up with the journal and with turns other processes committed. Caller holds the lock."""
        self.sync()
        head = self.git.head()
        if head is not None and head != self.committed:
            self._adopt_commit(head)

    def _replay(self, start: int | None = None, reloaded: bool = False) -> None:
        """Read the records appended since the last read (from `start`: an offset a snapshot
        recorded) and apply them, each checked first (store/replay.py); announce them. The first
        record refused stops it: `damage` names it, what is before it is applied."""
        bad: Damage | None = None
        self.journal.read_header()  # open: `offset` is where the next record starts
        at = self.journal.offset if start is None else start
        try:
            recs = self.journal.read_new(start)
        except CorruptJournalError as e:  # a line that is not JSON: the records before it count
            if e.offset is None:
                raise
            recs, bad = e.records, Damage(e.offset, "a record that is not JSON")
        if self.damage is not None:  # already stopped at an earlier record: nothing after it applies
            recs = []
        applied = []
        for end, r in recs:
            try:
                c = checked(self._graph, r)
            except InvalidNodeError as e:
                bad = Damage(at, str(e))
                break
            applied.append(self.apply(r, c))
            at = end
        if bad is not None and self.damage is None:
            self.damage = bad
            log.warning("session %s: %s", self.id, bad.error(self.id))
        owner = self._owner()
        if (applied or reloaded) and self.listeners and owner is not None:
            self.listeners.publish(owner, ([Reloaded()] if reloaded else [])
                                   + [e for r in applied for e in events_of(r, True)])

    def apply(self, r: dict[str, Any], c: Call | None = None) -> dict[str, Any]:
        """Apply one checked record to the graph and to the window of the next commit."""
        g = self._graph
        if "a" in r:
            c = c or call_from_record(r["a"])
            if g is None:
                if c.id != ROOT:
                    raise InvalidNodeError("journal does not start with ROOT")
                self._graph = Graph(c)
            else:
                g.apply_append(c)
                self.turn_new.append(c.id)
                if r.get("v"):  # a spawn root recorded with its branch name
                    g.apply_name(c.id, r["v"])
            self.dirty.add(c.id)
        elif g is None:
            raise InvalidNodeError("journal does not start with ROOT")
        elif "u" in r:
            g.apply_update(r["u"], r["f"])
            self.dirty.add(r["u"])
        elif "c" in r:
            g.apply_checkout(r["c"])
        elif "n" in r:
            g.apply_name(r["n"], r["v"])
        elif "m" in r:
            if r["v"] is None:
                g.extra.pop(r["m"], None)
            else:
                g.extra[r["m"]] = r["v"]
        else:
            raise InvalidNodeError(f"unknown journal record {sorted(r)}")
        self.meta_dirty = True
        return r
