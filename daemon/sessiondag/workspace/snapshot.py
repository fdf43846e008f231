"""A snapshot of a working dir: every path git would track, as (mode, blob id, size) (core/checkpoint.py).

`Snapshotter(root, cache_path, limits)` keeps one working dir's stat cache (stat_cache.py) and ignore
rules (ignore.py). `take(known, sink)` walks the tree and hashes only files whose stat changed;
each blob the session's repository does not hold yet (`known(sha)` False) goes to `sink(sha, data)`.
The stat cache learns the snapshot's rows only from `stored(state)`, once the caller has written
those blobs: a snapshot whose writing failed or was killed leaves the cache naming nothing that
is not stored (and the next snapshot walks).
With the dirty marks of a watcher (`mark_dirty`, trusted only while `watching` and since a walk that
ran under the watch), it looks at those paths alone instead of walking. A walk that overruns the time
budget stops and finishes from the dirty marks: the paths it did not reach keep their previous entry,
and the snapshot says so (`partial = "budget"`).

Everything is read through workspace/beneath.py (`Beneath.scan`: directory descriptors opened with
O_NOFOLLOW from the root down), so a directory swapped for a symlink mid-walk leads nowhere
outside; symlinks are recorded as links (their target is the blob), never followed. FIFOs, sockets and devices are left out. Files over
`max_file_bytes`, and files past the `max_snapshot_bytes` of new content one snapshot may add, are
hashed but not stored (`Entry.over`).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from typing import Callable, Iterable

from ..core.checkpoint import Entry, WorkspaceState
from .beneath import Beneath
from .ignore import IgnoreRules
from .listings import Listed, Stat
from .mounts import listings_safe
from .snapshot_run import _SECOND, Limits as Limits, SnapshotRun, git_mode as git_mode
from .stat_cache import StatCache


class Snapshotter:
    def __init__(self, root: str, cache_path: str | None, limits: Limits = Limits(),
                 exclude: Iterable[str] = ()):
        self.root = os.path.abspath(root)
        self.limits = limits
        self.cache = StatCache(cache_path, self.root)
        self.ignore: IgnoreRules | None = None
        self.exclude = {os.fsencode(os.path.relpath(x, self.root)) for x in exclude
                        if os.path.abspath(x).startswith(self.root + os.sep)}
        self.clock: Callable[[], int] = time.time_ns   # what the racy rules measure against (ns)
        self.reused = 0                # directories the last walk did not read again (listings.py)
        # False: read every directory (the file system may not move a directory's stat on each
        # change, mounts.py; bench/checkpoint_bench.py: the walk before)
        self.reuse_listings = listings_safe(self.root)
        self.listed = 0                # directories the last walk listed (read or reused)
        self.watching = False          # a watcher reports every change under root (mark_dirty)
        self.barrier: Callable[[], bool] | None = None   # True once the watcher has shown every change until now
        self._synced = False           # the barrier passed since the last snapshot: the dirty marks are complete
        self._dirty: set[bytes] | None = None   # None: unknown (walk); else the paths changed since the last walk
        self._taking = threading.Lock()
        # the last snapshot's rows for the cache until its blobs are stored: (state, rows, dirs, rules, fresh)
        self._pending: tuple[WorkspaceState, dict[bytes, tuple[Stat | None, Entry]], dict[bytes, list[int] | None],
                             list[list[int] | None], list[bytes], dict[bytes, Listed]] | None = None

    def mark_dirty(self, rels: Iterable[str | bytes]) -> None:
        if self._dirty is None:
            return
        for r in rels:
            r = os.fsencode(r).strip(b"/")
            if r.rsplit(b"/", 1)[-1] == b".gitignore":
                self._dirty = None      # the rules changed: the next snapshot walks
                return
            self._dirty.add(r)

    def sync(self) -> None:
        """Wait for the watcher to deliver every change made until now (call it without holding the
        session lock: the watcher's own callbacks may need it); the next `take` may then look at the
        dirty paths alone."""
        self._synced = bool(self.watching and self._dirty is not None and self.barrier is not None
                            and self.barrier())

    def lost_events(self) -> None:
        """The watcher restarted or overflowed: the next snapshot walks."""
        self._dirty = None

    def take(self, known: Callable[[str], bool], sink: Callable[[str, bytes], None],
             epoch: str = "") -> WorkspaceState:
        """`epoch`: what the repository's writer says a power loss changes (stat_cache.py)."""
        with self._taking:   # one at a time (a background snapshot and a diff's may meet)
            self.cache.epoch = epoch
            return self._take(known, sink)

    def stored(self, state: WorkspaceState) -> None:
        """`state` (the last `take`) is in the repository: its rows go to the stat cache."""
        with self._taking:
            p, self._pending = self._pending, None
            if p is None or p[0] is not state:
                return
            _, rows, dirs, rules, fresh, listings = p
            changed = (dirs, rules) != (self.cache.dirs, self.cache.rules)
            self.cache.dirs, self.cache.rules = dirs, rules
            try:
                self.cache.update(rows, rules_changed=changed, fresh=fresh, listings=listings)
            except OSError:
                pass  # a cache we cannot write costs a rehash next time, nothing else

    def _take(self, known: Callable[[str], bool], sink: Callable[[str, bytes], None]) -> WorkspaceState:
        t0 = time.monotonic()
        self.cache.load()
        self.ignore = ignore = IgnoreRules(self.root)   # read afresh: a .gitignore may have changed
        run = SnapshotRun(self, ignore, known, sink)
        dirty, use_dirty = self._dirty, self.watching and self._dirty is not None and self._synced
        self._synced = False
        if self._pending is not None or self.cache.distrust(known):
            # the last snapshot was never stored (the cache lacks the paths it had marked dirty), or
            # a power loss took blobs the cache named (their rows are gone): walk
            self._pending, use_dirty = None, False
        if self.watching:
            self._dirty = set()   # changes from now on (also those during this snapshot) count for the next
        try:
            b = Beneath(self.root, resolver=self.limits.resolver, allow_hard_link_reads=True)
        except OSError:
            raise FileNotFoundError(errno.ENOENT, "the working dir is gone", self.root) from None
        with b:
            if use_dirty:
                run.state.mode = "dirty"
                run.rows = dict(self.cache.rows)
                for rel in sorted(dirty or ()):
                    run.look_at(b, rel)
            else:
                run.rows, run.seeded = dict(self.cache.rows), True   # a C copy: most rows stay as they are
                run.walk(b.scan("."))
                run.settle()
                if run.out_of_time:
                    self._finish_from_dirty(run, b, dirty)
        run.state.entries = dict(zip(run.rows, map(_SECOND, run.rows.values())))   # a C loop
        dirs, rules = self.cache.dirs, self.cache.rules
        listings = {**self.cache.listings, **run.listings}   # each is checked against its directory's stat
        if run.state.mode == "walk" and run.state.partial is None:
            dirs, rules, listings = run.dirs, run.rules, run.listings
        elif run.state.mode == "walk":
            dirs, rules, listings = {}, [], {}    # rules not known for every directory
        self.reused, self.listed = run.reused, len(run.listed)
        self._pending = (run.state, run.rows, dirs, rules, run.fresh, listings)
        run.state.seconds = time.monotonic() - t0
        return run.state

    def _finish_from_dirty(self, run: SnapshotRun, b: Beneath, dirty: set[bytes] | None) -> None:
        """The walk ran out of time: paths under directories it did not list keep their previous
        entry; the paths a watcher marked dirty are looked at one by one."""
        run.state.partial = "budget"
        for p, row in self.cache.rows.items():
            parent = p.rpartition(b"/")[0]
            if p not in run.rows and parent not in run.listed:
                run.rows[p] = row
        run.deadline = float("inf")
        for rel in sorted(dirty or ()):
            run.look_at(b, rel)
