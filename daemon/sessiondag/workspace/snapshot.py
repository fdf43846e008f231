"""A snapshot of a working dir: every path git would track, as (mode, blob id, size) (core/checkpoint.py).

`Snapshotter(root, cache_path, limits)` keeps one working dir's stat cache (stat_cache.py) and ignore
rules (ignore.py). `take(known, sink)` walks the tree and hashes only files whose stat changed;
each blob the session's repository does not hold yet (`known(sha)` False) goes to `sink(sha, data)`.
With the dirty marks of a watcher (`mark_dirty`, trusted only while `watching` and since a walk that
ran under the watch), it looks at those paths alone instead of walking. A walk that overruns the time
budget stops and finishes from the dirty marks: the paths it did not reach keep their previous entry,
and the snapshot says so (`partial = "budget"`).

Everything is read through directory descriptors opened with O_NOFOLLOW from the root down, so a
directory swapped for a symlink mid-walk leads nowhere outside; symlinks are recorded as links
(their target is the blob), never followed. FIFOs, sockets and devices are left out. Files over
`max_file_bytes`, and files past the `max_snapshot_bytes` of new content one snapshot may add, are
hashed but not stored (`Entry.over`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ..core.checkpoint import MODE_EXEC, MODE_FILE, MODE_LINK, Entry, WorkspaceState, blob_id
from .ignore import GIT, IgnoreRules
from .stat_cache import RACY_NS, Stat, StatCache, file_key

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK = 1 << 20


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 8 << 20
    max_snapshot_bytes: int = 512 << 20
    budget_s: float = 10.0


def git_mode(st_mode: int) -> int:
    if stat.S_ISLNK(st_mode):
        return MODE_LINK
    return MODE_EXEC if st_mode & stat.S_IXUSR else MODE_FILE


class _Run:
    """One snapshot in progress."""

    def __init__(self, snap: "Snapshotter", known: Callable[[str], bool], sink: Callable[[str, bytes], None]):
        self.snap, self.known, self.sink = snap, known, sink
        self.rows: dict[bytes, tuple[Stat | None, Entry]] = {}
        self.listed: set[bytes] = set()          # directories whose listing was taken in full
        self.dirs: dict[bytes, list[int] | None] = {}   # directory -> its .gitignore's key (stat_cache.py)
        self.rules = [file_key(p) for p in snap.ignore.sources]
        self.same_rules: set[bytes] = set()      # directories ruled as last time (they and their parents)
        self.state = WorkspaceState()
        self.racy_before = time.time_ns() - RACY_NS
        self.deadline = time.monotonic() + snap.limits.budget_s
        self.out_of_time = False

    # --- one entry ---------------------------------------------------------------------------
    def examine(self, dfd: int, name: bytes, rel: bytes, st: os.stat_result) -> None:
        self.state.examined += 1
        s = Stat.of(st)
        hit = self.snap.cache.hit(rel, s)
        if hit is not None and (hit.stored or hit.over != "snapshot_limit"):
            self.rows[rel] = (s, hit)
            return
        if stat.S_ISLNK(st.st_mode):
            try:
                data = os.readlink(name, dir_fd=dfd)
            except OSError:
                return
            entry = self._blob(data, MODE_LINK)
        else:
            entry = self._file(dfd, name, st)
            if entry is None:
                return
        self.state.hashed += 1
        self.rows[rel] = (s if st.st_mtime_ns < self.racy_before else None, entry)

    def _blob(self, data: bytes, mode: int) -> Entry:
        sha = blob_id(data)
        if not self.known(sha):
            self.sink(sha, data)
            self.state.new_bytes += len(data)
        return Entry(mode, sha, len(data))

    def _file(self, dfd: int, name: bytes, st: os.stat_result) -> Entry | None:
        lim = self.snap.limits
        try:
            fd = os.open(name, _FILE, dir_fd=dfd)
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
                sha, size = _stream_hash(fd, fst.st_size)
                if self.known(sha):
                    return Entry(mode, sha, size)
                return Entry(mode, sha, size, "snapshot_limit")
            data = _read_all(fd, fst.st_size)
        finally:
            os.close(fd)
        return self._blob(data, mode)

    def _hash_only(self, fd: int, size: int, mode: int, why: str) -> Entry:
        sha, n = _stream_hash(fd, size)
        return Entry(mode, sha, n, why)

    # --- walking -----------------------------------------------------------------------------
    def walk(self, dfd: int, rel: bytes) -> None:
        """Everything under the directory open as `dfd` (path `rel`, b"" for the root)."""
        ign = self.snap.ignore
        cache = self.snap.cache
        if rel == b"" and self.rules == cache.rules:
            self.same_rules.add(b"\0")   # the root's parent: the rules from outside the tree
        stack: list[tuple[int, bytes]] = [(os.dup(dfd), rel)]
        try:
            while stack:
                fd, here = stack.pop()
                try:
                    if time.monotonic() > self.deadline:
                        self.out_of_time = True
                        continue
                    subdirs = []
                    with os.scandir(fd) as it:
                        entries = [(os.fsencode(e.name), e) for e in it]
                    key = self.dirs[here] = file_key(name=b".gitignore", dir_fd=fd)
                    parent = here.rpartition(b"/")[0] if here else b"\0"
                    same = parent in self.same_rules and here in cache.dirs and cache.dirs[here] == key
                    if same:
                        self.same_rules.add(here)
                    for name, e in entries:
                        if name == GIT:
                            continue
                        sub = here + b"/" + name if here else name
                        try:
                            st = e.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        if stat.S_ISDIR(st.st_mode):
                            if sub in self.snap.exclude or not (same and sub in cache.dirs) and ign.ignored(sub, True):
                                continue
                            subdirs.append((name, sub))
                        elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                            if not (same and sub in cache.rows) and ign.ignored(sub, False):
                                continue
                            self.examine(fd, name, sub, st)
                    self.listed.add(here)
                    for name, sub in reversed(subdirs):
                        try:
                            stack.append((os.open(name, _DIR, dir_fd=fd), sub))
                        except OSError:
                            continue
                finally:
                    os.close(fd)
        finally:
            for fd, _ in stack:
                os.close(fd)

    def look_at(self, root_fd: int, rel: bytes) -> None:
        """One path marked dirty: re-examine it (a directory: walk it), or drop it if it is gone."""
        for p in [p for p in self.rows if p == rel or p.startswith(rel + b"/")]:
            del self.rows[p]
        parts = rel.split(b"/")
        if GIT in parts:
            return
        fd = os.dup(root_fd)
        try:
            for i, part in enumerate(parts[:-1]):
                if self.snap.ignore.ignored(b"/".join(parts[:i + 1]), True):
                    return
                nfd = os.open(part, _DIR, dir_fd=fd)
                os.close(fd)
                fd = nfd
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if rel in self.snap.exclude or self.snap.ignore.ignored(rel, True):
                    return
                sub = os.open(parts[-1], _DIR, dir_fd=fd)
                try:
                    self.walk(sub, rel)
                finally:
                    os.close(sub)
            elif (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) and not self.snap.ignore.ignored(rel, False):
                self.examine(fd, parts[-1], rel, st)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                raise
        finally:
            os.close(fd)


def _read_all(fd: int, size: int) -> bytes:
    parts, n = [], 0
    while True:
        b = os.read(fd, max(CHUNK, size - n + 1))
        if not b:
            return b"".join(parts)
        parts.append(b)
        n += len(b)


def _stream_hash(fd: int, size: int) -> tuple[str, int]:
    """(git blob id, size) of a file read in chunks (its size as read, not as stat said)."""
    parts, n = [], 0
    while True:
        b = os.read(fd, CHUNK)
        if not b:
            break
        parts.append(b)
        n += len(b)
        if n > size:  # growing while we read: hash what we read
            break
    h = hashlib.sha1(b"blob %d\0" % n)
    for b in parts:
        h.update(b)
    return h.hexdigest(), n


class Snapshotter:
    def __init__(self, root: str, cache_path: str | None, limits: Limits = Limits(),
                 exclude: Iterable[str] = ()):
        self.root = os.path.abspath(root)
        self.limits = limits
        self.cache = StatCache(cache_path, self.root)
        self.ignore: IgnoreRules | None = None
        self.exclude = {os.fsencode(os.path.relpath(x, self.root)) for x in exclude
                        if os.path.abspath(x).startswith(self.root + os.sep)}
        self.watching = False          # a watcher reports every change under root (mark_dirty)
        self.barrier: Callable[[], bool] | None = None   # True once the watcher has shown every change until now
        self._synced = False           # the barrier passed since the last snapshot: the dirty marks are complete
        self._dirty: set[bytes] | None = None   # None: unknown (walk); else the paths changed since the last walk

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

    def take(self, known: Callable[[str], bool], sink: Callable[[str, bytes], None]) -> WorkspaceState:
        t0 = time.monotonic()
        self.cache.load()
        self.ignore = IgnoreRules(self.root)   # read afresh: a .gitignore may have changed
        run = _Run(self, known, sink)
        dirty, use_dirty = self._dirty, self.watching and self._dirty is not None and self._synced
        self._synced = False
        if self.watching:
            self._dirty = set()   # changes from now on (also those during this snapshot) count for the next
        try:
            root_fd = os.open(self.root, _DIR)
        except OSError:
            raise FileNotFoundError(errno.ENOENT, "the working dir is gone", self.root) from None
        try:
            if use_dirty:
                run.state.mode = "dirty"
                run.rows = {p: row for p, row in self.cache.rows.items()}
                for rel in sorted(dirty or ()):
                    run.look_at(root_fd, rel)
            else:
                run.walk(root_fd, b"")
                if run.out_of_time:
                    self._finish_from_dirty(run, root_fd, dirty)
        finally:
            os.close(root_fd)
        run.state.entries = {p: e for p, (_, e) in sorted(run.rows.items())}
        before = (self.cache.rows, self.cache.dirs, self.cache.rules)
        self.cache.rows = run.rows
        if run.state.mode == "walk" and run.state.partial is None:
            self.cache.dirs, self.cache.rules = run.dirs, run.rules
        elif run.state.mode == "walk":
            self.cache.dirs, self.cache.rules = {}, []    # rules not known for every directory
        if (self.cache.rows, self.cache.dirs, self.cache.rules) != before:
            try:
                self.cache.save()
            except OSError:
                pass  # a cache we cannot write costs a rehash next time, nothing else
        run.state.seconds = time.monotonic() - t0
        return run.state

    def _finish_from_dirty(self, run: _Run, root_fd: int, dirty: set[bytes] | None) -> None:
        """The walk ran out of time: paths under directories it did not list keep their previous
        entry; the paths a watcher marked dirty are looked at one by one."""
        run.state.partial = "budget"
        for p, row in self.cache.rows.items():
            parent = p.rpartition(b"/")[0]
            if p not in run.rows and parent not in run.listed:
                run.rows[p] = row
        run.deadline = float("inf")
        for rel in sorted(dirty or ()):
            run.look_at(root_fd, rel)
