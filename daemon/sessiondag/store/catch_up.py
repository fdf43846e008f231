"""How a Session's in-memory graph follows disk (a part of store/session.py's Session): the first
load (newest snapshot + the journal records it does not cover), catching up with records other
processes wrote, following their journal rotation, adopting their turn commits. Every method but
the public accessors runs under the session lock. See docs/storage.md.
"""

from __future__ import annotations

import logging
from typing import Any

from ..core.errors import InvalidNodeError
from ..core.gc_pause import gc_paused
from ..core.graph import Graph
from ..core.model import ROOT, call_from_record
from .events import Reloaded, events_of
from .journal import CorruptJournalError
from .replay import Damage, checked
from .snapshot import graph_from_snapshot
from .snapshot_sync import recover

log = logging.getLogger(__name__)


class CatchUp:
    """Mixin of Session: the state it reads and sets is Session's (`_graph`, `journal`, `git`, …)."""

    # --- loading and catching up -------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The in-memory graph, loaded lazily and refreshed when another process wrote."""
        if self._graph is None or self.journal.has_news():
            with self.journal.locked():
                self._sync()
        return self._graph

    @property
    def loaded_graph(self) -> Graph | None:
        """The graph as it is in memory now, without catching up with disk (None before the first
        load or after a dropped write). For listeners, which must not read `graph`."""
        return self._graph

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

    def _sync(self) -> None:
        """Bring the graph up to date with disk. Caller holds the lock."""
        if self._graph is None:
            self._load()
            return
        if self.journal.in_sync():  # one pread of the hint: nothing new, not rotated
            return
        if self.journal.rotated():
            if not self._follow_rotation():
                self._load()
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
        self._dirty, self._meta_dirty, self._turn_new = set(), False, []
        self._replay()
        return True

    def _load(self) -> None:
        with gc_paused():
            self._load_all()

    def _load_all(self) -> None:
        reloaded, self._loaded_once = self._loaded_once, True
        self.journal.close_file()
        self.git.refresh()
        recover(self.git)  # a power loss with snapshots unsynced (store/snapshot_sync.py)
        self._graph = None
        self.damage = None
        self._dirty, self._meta_dirty, self._turn_new = set(), False, []
        head = self.git.head()
        self.journal.read_header()
        start = None
        if head is not None:
            meta, root = self.git.load_meta(head)
            self._graph = graph_from_snapshot(meta, self.git.iter_chunks(root))
            self.git.refresh()  # unmap the packs just read: their pages would count as our RSS
            self.turn = meta["turn"]
            self.usage_at_commit = tuple(meta["usage_total"])
            self.usage_at_previous_commit = tuple(meta.get("usage_previous", (0, 0)))
            jmeta = meta["journal"]
            if jmeta["id"] == self.journal.journal_id:
                start = jmeta["offset"]
        self._committed = head
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
        self.usage_at_commit = tuple(meta["usage_total"])
        self.usage_at_previous_commit = tuple(meta.get("usage_previous", (0, 0)))
        self._committed = head
        jm = meta["journal"]
        if jm["id"] == self.journal.journal_id and jm["offset"] == self.journal.offset:
            self._dirty, self._meta_dirty, self._turn_new = set(), False, []

    def _sync_commit(self) -> None:
        """Catch up with the journal and with turns other processes committed. Caller holds the lock."""
        self._sync()
        head = self.git.head()
        if head != self._committed:
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
            applied.append(self._apply(r, c))
            at = end
        if bad is not None and self.damage is None:
            self.damage = bad
            log.warning("session %s: %s", self.id, bad.error(self.id))
        if (applied or reloaded) and self._listeners:
            self._publish(([Reloaded()] if reloaded else []) + [e for r in applied for e in events_of(r, True)])

    def _apply(self, r: dict[str, Any], c: Any = None) -> dict[str, Any]:
        g = self._graph
        if "a" in r:
            c = c or call_from_record(r["a"])
            if g is None:
                if c.id != ROOT:
                    raise InvalidNodeError("journal does not start with ROOT")
                self._graph = Graph(c)
            else:
                g.apply_append(c)
                self._turn_new.append(c.id)
                if r.get("v"):  # a spawn root recorded with its branch name
                    g.apply_name(c.id, r["v"])
            self._dirty.add(c.id)
        elif "u" in r:
            g.apply_update(r["u"], r["f"])
            self._dirty.add(r["u"])
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
        self._meta_dirty = True
        return r
