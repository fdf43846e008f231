"""Directory listings a warm walk reuses instead of reading the directory again (git's untracked cache).

A directory's set of names changes only through its own entries (a create, unlink, rename, link in
it), and each of those sets the directory's mtime and ctime to the current time; ctime cannot be
set back by anyone. So a directory whose (mtime_ns, ctime_ns, inode) are what they were when the
walk listed it holds the same names, each naming the same kind of entry (replacing a file by a
directory or a link is an unlink and a create). `Listed` keeps what the walk did with those names
under the ignore rules of that time: the files and links it examined and the subdirectories it
entered. A walk under the same rules (workspace/snapshot.py: the directory's `.gitignore` and its
parents' unchanged) that finds the same directory stat lstats the files named there, in one call
per directory (`lstat_all`: the loop runs in C), instead of reading the directory and sorting out
its entries again; every file is still lstat'ed, so a changed file is still seen. A `Listed` also
holds the rows (stat_cache.py) the walk kept for its files and their stats: when the lstat of every
file is the stat its row was hashed at (one tuple comparison, in C), those rows are taken as they
are, without a lookup per file. Such a row is right whatever the cache holds since (a file whose
whole stat is the one it was hashed at is unchanged: its ctime cannot be set back); rows are filled
from the stat cache itself when a listing is read back from its file (and after the cache dropped
rows whose blobs a power loss took: `forget_rows`).

git's racily-clean rule, for directories: a listing is kept only when the directory's ctime lies
more than RACY_NS before the walk began (stat_cache.py). A change made in the same clock tick as the
listing could leave the ctime as it was; one made a tick later cannot. The stat is taken (fstat of
the open directory) before its entries are read, so a change while they are read shows next time.
"""

from __future__ import annotations

import os
from functools import partial
from operator import attrgetter
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..core.checkpoint import Entry, path_bytes, path_text

Stat = tuple[int, int, int, int, int]
"""What lstat said of a file when it was hashed: (size, mtime_ns, ctime_ns, ino, st_mode) (stat_cache.py)."""
Row = tuple[Stat | None, Entry]
"""A stat cache row: the stat the entry was hashed at (None: racy, trusted for nothing) and the entry."""

DirKey = tuple[int, int, int]
"""What says a directory's names are the ones listed: (mtime_ns, ctime_ns, inode)."""

FILE_KEY: Callable[[os.stat_result], Stat] = attrgetter(
    "st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "st_mode")
"""stat_cache.stat_key in C (the same tuple), for `map`."""


def dir_key(st: os.stat_result) -> DirKey:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class Listed:
    """One directory as the last walk left it: `files` (names of the files and links examined),
    `paths` (the same, from the root), `subs` (subdirectories entered), `gitignore` (it has an
    entry of that name); `rows` (each path's stat cache row, None: none) and `stats` (each row's
    stat, None where a row has none or is racy: it matches no lstat), once `fill`ed."""

    __slots__ = ("key", "files", "paths", "subs", "gitignore", "rows", "stats")

    def __init__(self, key: DirKey, rel: bytes, files: Sequence[bytes], subs: Sequence[bytes], gitignore: bool,
                 rows: Mapping[bytes, Row] | None = None):
        self.key, self.files, self.subs, self.gitignore = key, tuple(files), tuple(subs), gitignore
        prefix = rel + b"/" if rel else b""
        self.paths = tuple(prefix + n for n in self.files)
        self.rows: tuple[Row | None, ...] | None = None
        self.stats: tuple[Stat | None, ...] | None = None
        if rows is not None:
            self.fill(rows)

    def fill(self, rows: Mapping[bytes, Row]) -> None:
        """Take each path's row from `rows` (path -> (stat or None, entry))."""
        got = self.rows = tuple(map(rows.get, self.paths))
        self.stats = tuple(r[0] if r is not None else None for r in got)

    def again(self, rows: Mapping[bytes, Row]) -> "Listed":
        """The same listing with its rows from `rows` (a new object: the stat cache's is never changed)."""
        out = Listed.__new__(Listed)
        out.key, out.files, out.subs, out.gitignore, out.paths = self.key, self.files, self.subs, self.gitignore, \
            self.paths
        out.fill(rows)
        return out

    def row(self, rel: bytes) -> list[object]:
        return [path_text(rel), list(self.key), [path_text(n) for n in self.files],
                [path_text(n) for n in self.subs], self.gitignore]


def from_rows(items: Iterable[Any]) -> dict[bytes, Listed]:
    """Listings as the stat cache file holds them (`Listed.row`); raises on a malformed one."""
    out = {}
    for rel_t, key, files, subs, gi in items:
        rel = path_bytes(rel_t)
        out[rel] = Listed((int(key[0]), int(key[1]), int(key[2])), rel, [path_bytes(n) for n in files],
                          [path_bytes(n) for n in subs], bool(gi))
    return out


def forget_rows(listings: Iterable[Listed]) -> None:
    """The stat cache dropped rows: each listing takes its rows from the cache again at its next use."""
    for x in listings:
        x.rows = x.stats = None


def lstat_all(fd: int, names: Sequence[bytes]) -> list[os.stat_result] | None:
    """The lstat of each name in the directory open as `fd` (never following a link); None when
    one of them is gone or no longer reachable (the caller reads the directory instead)."""
    try:
        return list(map(partial(os.lstat, dir_fd=fd), names))
    except (FileNotFoundError, NotADirectoryError):
        return None
