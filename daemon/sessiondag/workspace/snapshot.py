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
import stat
import threading
import time
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Callable, Generator, Iterable, Sequence, cast

from ..core.checkpoint import MODE_EXEC, MODE_FILE, MODE_LINK, Entry, WorkspaceState, blob_id
from ..core.errors import PathRefusedError
from .beneath import Beneath
from .beneath_scan import DIR_STAT, Listing
from .file_read import read_all, stream_hash
from .ignore import GIT, IgnoreRules
from .listings import FILE_KEY, Listed, Stat, lstat_all
from .mounts import listings_safe
from .stat_cache import RACY_NS, StatCache, file_key, stat_key

_MISS: tuple[None, None] = (None, None)    # a path the stat cache does not hold: its stat matches nothing
_IFMT, _IFDIR, _IFREG, _IFLNK = 0o170000, stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK
_SECOND = itemgetter(1)


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 8 << 20
    max_snapshot_bytes: int = 512 << 20
    budget_s: float = 10.0
    resolver: str = "auto"        # workspace.beneath


def git_mode(st_mode: int) -> int:
    if stat.S_ISLNK(st_mode):
        return MODE_LINK
    return MODE_EXEC if st_mode & stat.S_IXUSR else MODE_FILE


class _Run:
    """One snapshot in progress."""

    def __init__(self, snap: "Snapshotter", ignore: IgnoreRules, known: Callable[[str], bool],
                 sink: Callable[[str, bytes], None]):
        self.snap, self.ignore, self.known, self.sink = snap, ignore, known, sink
        self.rows: dict[bytes, tuple[Stat | None, Entry]] = {}
        self.listed: set[bytes] = set()          # directories whose listing was taken in full
        self.dirs: dict[bytes, list[int] | None] = {}   # directory -> its .gitignore's key (stat_cache.py)
        self.rules = [file_key(p) for p in ignore.sources]
        self.same_rules: set[bytes] = set()      # directories ruled as last time (they and their parents)
        self.state = WorkspaceState()
        self.racy_before = snap.clock() - RACY_NS
        self.listings: dict[bytes, Listed] = {}   # directories this walk listed (or reused), for the next
        self.reused = 0                          # directories whose listing was reused (listings.py)
        self.deadline = time.monotonic() + snap.limits.budget_s
        self.out_of_time = False
        self._row_dirs: set[bytes] | None = None  # every directory holding a row (look_at, built once)
        self.fresh: list[bytes] = []             # paths whose row this run made (every other row is the cache's)
        # a walk that starts from the cache's rows (seeded): the paths each directory it listed names,
        # and how many of them it could not read (their rows went)
        self.seeded = False
        self.confirmed: list[Sequence[bytes]] = []
        self.failed = 0

    # --- one entry ---------------------------------------------------------------------------
    def examine(self, d: Listing, name: bytes, rel: bytes, st: os.stat_result) -> None:
        """One file or link: its cached row if its stat is the one cached, else read and hashed."""
        self.state.examined += 1
        old = self.snap.cache.rows.get(rel, _MISS)
        if old[0] == stat_key(st):
            self.rows[rel] = old     # the same row object: the cache's save sees it unchanged
        else:
            self._hash(d, name, rel, st)

    def _hash(self, d: Listing, name: bytes, rel: bytes, st: os.stat_result) -> None:
        """Read and hash one file or link; its row keeps its stat unless that is racy (or the file
        was past the snapshot limit: it is looked at again next time, when there may be room)."""
        if stat.S_ISLNK(st.st_mode):
            try:
                data = d.readlink(name)
            except OSError:
                return self._failed(rel)
            entry = self._blob(data, MODE_LINK)
        else:
            found = self._file(d, name)
            if found is None:
                return self._failed(rel)
            entry = found
        self.state.hashed += 1
        self.fresh.append(rel)
        trusted = st.st_mtime_ns < self.racy_before and entry.over != "snapshot_limit"
        self.rows[rel] = (stat_key(st) if trusted else None, entry)

    def _failed(self, rel: bytes) -> None:
        """`rel` could not be read (gone meanwhile, or no longer a file): it has no row."""
        self.rows.pop(rel, None)
        self.failed += 1

    def _blob(self, data: bytes, mode: int) -> Entry:
        sha = blob_id(data)
        if not self.known(sha):
            self.sink(sha, data)
            self.state.new_bytes += len(data)
        return Entry(mode, sha, len(data))

    def _file(self, d: Listing, name: bytes) -> Entry | None:
        lim = self.snap.limits
        try:
            fd = d.open(name)
        except OSError:
            return None  # gone, or turned into a symlink since the listing: the next snapshot sees it
        try:
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode):
                return None
            mode = git_mode(fst.st_mode)
            if fst.st_size > lim.max_file_bytes:
                return self._hash_only(fd, fst.st_size, mode, "file_limit")
            if self.state.new_bytes + fst.st_size > lim.max_snapshot_bytes:
                sha, size = stream_hash(fd, fst.st_size)
                if self.known(sha):
                    return Entry(mode, sha, size)
                return Entry(mode, sha, size, "snapshot_limit")
            data = read_all(fd, fst.st_size)
        finally:
            os.close(fd)
        return self._blob(data, mode)

    def _hash_only(self, fd: int, size: int, mode: int, why: str) -> Entry:
        sha, n = stream_hash(fd, size)
        return Entry(mode, sha, n, why)

    # --- walking -----------------------------------------------------------------------------
    def walk(self, listings: Generator[Listing, None, None]) -> None:
        """Everything under the first listing's directory (Beneath.scan), entering the
        subdirectories the ignore rules keep, until the time budget runs out. The loop over a
        directory's entries is examine() inlined for the warm case (a file whose stat is the cached
        one: a tuple built and compared, its row kept): it runs once per file of the tree."""
        ign = self.ignore
        cache = self.snap.cache
        cached, rows, exclude, cache_dirs = cache.rows.get, self.rows, self.snap.exclude, cache.dirs
        cache_listings = cache.listings if self.snap.reuse_listings else {}
        racy_before = self.racy_before
        same_rules, listed, listings_out, dirs_out = self.same_rules, self.listed, self.listings, self.dirs
        seeded, confirmed = self.seeded, self.confirmed
        if self.rules == cache.rules:
            same_rules.add(b"\0")   # the root's parent: the rules from outside the tree
        for d in listings:
            if time.monotonic() > self.deadline:
                self.out_of_time = True
                return                   # the generator closes what it holds
            here = d.rel
            parent = here.rpartition(b"/")[0] if here else b"\0"
            dst = os.fstat(d.fd)         # before its entries are read: a change meanwhile shows next time
            dkey = (dst.st_mtime_ns, dst.st_ctime_ns, dst.st_ino)
            was = cache_listings.get(here)
            if was is not None and was.key == dkey and parent in same_rules and here in cache_dirs:
                key = file_key(name=b".gitignore", dir_fd=d.fd) if was.gitignore else None
                if cache_dirs[here] == key and (sts := lstat_all(d.fd, was.files)) is not None:
                    # the same names under the same rules (listings.py): their lstats alone
                    if was.stats is None:
                        was.fill(cache.rows)
                    if tuple(map(FILE_KEY, sts)) == was.stats:   # every row as it is (C loops)
                        if not seeded:   # (seeded: they are the cache's own, in `rows` already)
                            rows.update(zip(was.paths, cast("tuple[tuple[Stat | None, Entry], ...]", was.rows)))
                        listings_out[here] = was
                    else:
                        self._rehash(d, was, sts)
                    dirs_out[here] = key
                    same_rules.add(here)
                    self.state.examined += len(sts)
                    if exclude:
                        d.enter.extend(s for s in was.subs if (here + b"/" + s if here else s) not in exclude)
                    else:
                        d.enter.extend(was.subs)
                    listed.add(here)
                    confirmed.append(was.paths)
                    self.reused += 1
                    continue
            gi = d.entries.get(b".gitignore")   # its lstat from the listing (file_key, without a syscall)
            key = self.dirs[here] = None if gi is None else [gi.st_size, gi.st_mtime_ns, gi.st_ctime_ns, gi.st_ino] \
                if gi is not DIR_STAT else file_key(name=b".gitignore", dir_fd=d.fd)
            same = parent in self.same_rules and here in cache_dirs and cache_dirs[here] == key
            if same:
                self.same_rules.add(here)
            prefix = here + b"/" if here else b""
            files: list[bytes] = []
            for name, st in d.entries.items():
                m = st.st_mode
                kind = m & _IFMT
                if kind == _IFDIR:
                    sub = prefix + name
                    if name == GIT or sub in exclude or not (same and sub in cache_dirs) and ign.ignored(sub, True):
                        continue
                    d.enter.append(name)
                    continue
                if kind != _IFREG and kind != _IFLNK:
                    continue
                sub = prefix + name
                old = cached(sub, _MISS)
                if (old is _MISS or not same) and (name == GIT or ign.ignored(sub, False)):
                    continue
                files.append(name)
                if old[0] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, m):   # stat_key, inlined
                    rows[sub] = old      # the same row object: the cache's save sees it unchanged
                else:
                    self._hash(d, name, sub, st)
            self.state.examined += len(files)
            self.listed.add(here)
            confirmed.append([prefix + n for n in files] if seeded else ())
            if dst.st_ctime_ns < racy_before:    # else a change in the same tick could keep its stat
                self.listings[here] = Listed(dkey, here, files, d.enter, gi is not None, rows)

    def _rehash(self, d: Listing, was: Listed, sts: list[os.stat_result]) -> None:
        """The directory `d` with the names of `was` (walk: reused), some file's stat not the one
        its row was hashed at: keep each row whose stat is the cached one, hash the others."""
        cached, rows = self.snap.cache.rows.get, self.rows
        for name, path, st in zip(was.files, was.paths, sts):
            old = cached(path, _MISS)
            if old[0] == stat_key(st):
                rows[path] = old      # the cache's own row object: its save sees it unchanged
            elif st.st_mode & _IFMT in (_IFREG, _IFLNK):
                self._hash(d, name, path, st)
            else:
                self._failed(path)
        self.listings[d.rel] = was.again(rows)

    def settle(self) -> None:
        """After a seeded walk: drop the rows of the paths it did not confirm (gone, ignored now, under
        a directory it did not list): a count tells whether there are any."""
        if not self.seeded:
            return
        self.seeded = False
        if len(self.rows) == sum(map(len, self.confirmed)) - self.failed:
            return       # every row left is one of a path the walk listed
        rows = self.rows
        self.rows = {p: rows[p] for p in chain.from_iterable(self.confirmed) if p in rows}

    def _drop(self, rel: bytes) -> None:
        """Forget `rel` and, if it was a directory, every row under it."""
        self.rows.pop(rel, None)
        if self._row_dirs is None:
            self._row_dirs = {p.rpartition(b"/")[0] for p in self.rows}
            for p in list(self._row_dirs):
                while p:
                    p = p.rpartition(b"/")[0]
                    self._row_dirs.add(p)
        if rel in self._row_dirs:
            for p in [p for p in self.rows if p.startswith(rel + b"/")]:
                del self.rows[p]

    def look_at(self, b: Beneath, rel: bytes) -> None:
        """One path marked dirty: re-examine it (a directory: walk it), or drop it if it is gone."""
        self._drop(rel)
        parts = rel.split(b"/")
        if GIT in parts:
            return
        ign = self.ignore
        for i in range(1, len(parts)):
            if ign.ignored(b"/".join(parts[:i]), True):
                return
        parent, name = b"/".join(parts[:-1]), parts[-1]
        try:
            listings = b.scan(parent or ".", names=[name])
            first = next(listings)
        except (OSError, PathRefusedError):
            return              # the parent is gone, or a symlink now: nothing there is tracked
        try:
            for st in first.entries.values():
                if stat.S_ISDIR(st.st_mode):
                    if rel not in self.snap.exclude and not ign.ignored(rel, True):
                        first.enter.append(name)
                elif (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) and not ign.ignored(rel, False):
                    self.examine(first, name, rel, st)
            if first.enter:
                self.walk(listings)
        finally:
            listings.close()


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
        run = _Run(self, ignore, known, sink)
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

    def _finish_from_dirty(self, run: _Run, b: Beneath, dirty: set[bytes] | None) -> None:
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
