"""One snapshot of a working dir in progress (snapshot.py's Snapshotter runs it): the walk over the
directories (listings reused where their stat says so), each file's row taken from the stat cache
or read and hashed, and the dirty paths a watcher marked looked at alone."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Callable, Generator, Protocol, Sequence, cast

from ..core.checkpoint import MODE_EXEC, MODE_FILE, MODE_LINK, Entry, WorkspaceState, blob_id
from ..core.errors import PathRefusedError
from .beneath import Beneath
from .beneath_scan import DIR_STAT, Listing
from .file_read import read_all, stream_hash
from .ignore import GIT, IgnoreRules
from .listings import FILE_KEY, Listed, Stat, lstat_all
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


class RunOwner(Protocol):
    """What a run reads of its Snapshotter (snapshot.py): the stat cache, the limits, the paths
    left out, whether listings may be reused, and the clock the racy rules measure against."""
    cache: StatCache
    limits: Limits
    exclude: set[bytes]
    reuse_listings: bool
    clock: Callable[[], int]


class SnapshotRun:
    """One snapshot in progress."""

    def __init__(self, snap: RunOwner, ignore: IgnoreRules, known: Callable[[str], bool],
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
