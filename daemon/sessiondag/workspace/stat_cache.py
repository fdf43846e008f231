"""The stat cache of a working dir, like git's index: path -> what lstat said when the file was hashed.

A path whose (size, mtime_ns, ctime_ns, ino, st_mode) are what the cache holds is not read again: its
blob id is the cached one. An entry is only cached when its mtime lies more than RACY_NS before the
scan began (git's "racily clean" rule): a file written in the same clock tick as the scan could
change again without changing its stat. It also keeps each directory's listing as the last walk used it
(workspace/listings.py: git's untracked cache), so a directory whose stat did not change is not
read again. The cache also is the previous snapshot (every path it
tracks), which a snapshot falls back to for the paths it did not get to look at.

It lives in one file per session (`<session dir>/workspace.cache`): a first line with every row,
written whole (temp + rename), then one line per later snapshot with only the rows it changed or
dropped (appended: a warm snapshot writes what changed, not 10,000 rows), until those lines hold
more than a quarter as many rows as the first line and the file is written whole again. No fsync:
losing it costs one full rehash, never a wrong snapshot — a cache that does not parse, a line cut
short by a crash, or a cache of another working dir is dropped whole.

A row is written only once the blob it names is in the session's repository (the snapshotter
applies a snapshot's rows after its packs are written: snapshot.py), but those packs are not
fsynced either (store/snapshot_sync.py): a power loss may keep a row and lose its blob. So every
line names the `epoch` it was written in (what the repository's writer says a power loss would
change: the boot id), and a cache holding a line of another epoch is `foreign`: before it is used,
each row whose blob the repository lacks is dropped (`distrust`), and it is written whole again.
"""

from __future__ import annotations

import os
import stat
import tempfile
from itertools import compress
from operator import is_not
from typing import Any, Callable, Iterator

import orjson

from ..core.checkpoint import Entry, path_bytes, path_text
from .listings import Listed, Stat, forget_rows, from_rows

VERSION = 3
RACY_NS = 1_000_000_000   # covers filesystems with 1 s timestamps


# Stat (listings.py): what lstat said of a file when it was hashed, (size, mtime_ns, ctime_ns, ino,
# st_mode). A plain tuple: a warm walk builds one per file and compares it with the cached one (C).


def stat_key(st: os.stat_result) -> Stat:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


class StatCache:
    def __init__(self, path: str | None, root: str):
        self.path, self.root = path, root
        self.rows: dict[bytes, tuple[Stat | None, Entry]] = {}   # path -> (stat when hashed or None: racy, entry)
        # the ignore rules the rows were taken under: directory -> its .gitignore's stat (None: none),
        # and the stats of the rule files outside the tree; the same rules let a walk skip matching
        # the paths it included last time
        self.dirs: dict[bytes, list[int] | None] = {}
        self.rules: list[list[int] | None] = []
        self.listings: dict[bytes, Listed] = {}   # directory -> its names as the last walk used them (listings.py)
        self._seen: tuple[int, int, int] | None = None            # the file's (ino, size, mtime) we read or wrote
        self._logged = 0                                          # rows in the lines after the first
        self.epoch = ""             # the epoch lines are written in (set by the snapshotter before load)
        self.foreign = False        # a line was written in another epoch: its blobs may be lost
        self._whole = False         # the next update writes the file whole

    def _file_ident(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path) if self.path else None
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns) if st else None

    def load(self) -> None:
        """Read the file unless it is the one this object last read or wrote."""
        ident = self._file_ident()
        if ident is not None and ident == self._seen:
            return
        self.rows, self.dirs, self.rules, self._logged, self.foreign = {}, {}, [], 0, False
        self.listings = {}
        self._seen = ident
        if ident is None:
            return
        epoch, path = self.epoch, self.path
        if path is None:
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as f:   # never blocks on a FIFO planted there, never follows a link
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return
                lines = f.read().split(b"\n")
            doc = orjson.loads(lines[0])
            if doc.get("version") != VERSION or doc.get("root") != self.root:
                return
            rows = dict(_rows(doc["rows"]))
            listings = from_rows(doc["listings"])
            logged, foreign = 0, doc.get("epoch") != epoch
            for line in lines[1:]:
                if not line:
                    continue
                delta = orjson.loads(line)
                foreign = foreign or delta.get("epoch") != epoch
                rows.update(_rows(delta["set"]))
                for p in delta["del"]:
                    rows.pop(path_bytes(p), None)
                listings.update(from_rows(delta.get("lset", ())))
                for p in delta.get("ldel", ()):
                    listings.pop(path_bytes(p), None)
                logged += len(delta["set"]) + len(delta["del"]) + len(delta.get("lset", ())) + \
                    len(delta.get("ldel", ()))
            dirs = {path_bytes(p): st for p, st in doc["dirs"]}
            self.rows, self.dirs, self.rules, self._logged = rows, dirs, doc["rules"], logged
            self.listings, self.foreign = listings, foreign
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
            self.rows, self.dirs, self.rules, self._logged, self.listings = {}, {}, [], 0, {}

    def distrust(self, known: Callable[[str], bool]) -> int:
        """A foreign cache (see the module doc): drop each row whose blob `known` (the repository)
        lacks — its file is hashed again — and write the file whole next time. How many went."""
        if not self.foreign:
            return 0
        lost = [p for p, (_, e) in self.rows.items() if e.over is None and not known(e.sha)]
        for p in lost:
            del self.rows[p]
        forget_rows(self.listings.values())
        self.foreign, self._whole = False, True
        return len(lost)

    def update(self, rows: dict[bytes, tuple[Stat | None, Entry]], rules_changed: bool = False,
               fresh: list[bytes] | None = None, listings: dict[bytes, Listed] | None = None) -> None:
        """Make `rows` the cache and write what changed: a row object that is the one the cache
        holds counts as unchanged (a snapshot keeps the rows it did not rehash). `fresh`: the paths
        whose row the caller made anew, when it knows every other row of `rows` is the cache's own
        object (then no pass over all the rows is needed while none went). `listings`: the
        directory listings to keep (None: those held), told apart the same way."""
        old, old_l = self.rows, self.listings
        new_l = old_l if listings is None else listings
        l_set = list(compress(new_l, map(is_not, map(old_l.get, new_l), new_l.values())))   # a C loop
        l_del = [p for p in old_l if p not in new_l]
        if fresh is None:
            changed = [p for p, row in rows.items() if old.get(p) is not row]
        else:
            changed = [p for p in dict.fromkeys(fresh) if p in rows and old.get(p) is not rows[p]]
        added = sum(1 for p in changed if p not in old)
        dropped = [] if len(old) + added == len(rows) else [p for p in old if p not in rows]
        self.rows, self.listings = rows, new_l
        if not changed and not dropped and not l_set and not l_del and not rules_changed and not self._whole:
            return
        if not self.path:
            return
        if rules_changed or self._whole or self._seen is None or \
                self._logged + len(changed) + len(dropped) + len(l_set) + len(l_del) > len(rows) // 4 + 64:
            self.save()
            return
        line = orjson.dumps({"set": [_row(p, rows[p]) for p in changed], "del": [path_text(p) for p in dropped],
                             "lset": [new_l[p].row(p) for p in l_set], "ldel": [path_text(p) for p in l_del],
                             "epoch": self.epoch})
        with open(self.path, "ab") as f:
            f.write(b"\n" + line)
        self._logged += len(changed) + len(dropped) + len(l_set) + len(l_del)
        self._seen = self._file_ident()

    def save(self) -> None:
        if not self.path:
            return
        doc = {"version": VERSION, "root": self.root, "epoch": self.epoch,
               "rows": [_row(p, row) for p, row in self.rows.items()],
               "dirs": [[path_text(p), st] for p, st in self.dirs.items()], "rules": self.rules,
               "listings": [x.row(p) for p, x in self.listings.items()]}
        d = os.path.dirname(self.path)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".workspace.cache.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(orjson.dumps(doc))
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._logged, self._whole = 0, False
        self._seen = self._file_ident()


def _row(p: bytes, row: tuple[Stat | None, Entry]) -> list[object]:
    st, e = row
    return [path_text(p), list(st) if st else None,
            e.mode, e.sha, e.size, e.over]


def _rows(items: list[Any]) -> Iterator[tuple[bytes, tuple[Stat | None, Entry]]]:
    for p, st, mode, sha, size, over in items:
        yield path_bytes(p), ((st[0], st[1], st[2], st[3], st[4]) if st else None, Entry(mode, sha, size, over))


def file_key(path: str | None = None, *, name: bytes | None = None, dir_fd: int | None = None) -> list[int] | None:
    """What identifies a version of a rules file: [size, mtime_ns, ctime_ns, ino], None if absent."""
    try:
        if name is not None:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        elif path is not None:
            st = os.stat(path)
        else:
            return None
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
