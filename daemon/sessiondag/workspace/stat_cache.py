"""The stat cache of a working dir, like git's index: path -> what lstat said when the file was hashed.

A path whose (size, mtime_ns, ctime_ns, ino, st_mode) are what the cache holds is not read again: its
blob id is the cached one. An entry is only cached when its mtime lies more than RACY_NS before the
scan began (git's "racily clean" rule): a file written in the same clock tick as the scan could
change again without changing its stat. The cache also is the previous snapshot (every path it
tracks), which a snapshot falls back to for the paths it did not get to look at.

It lives in one file per session (`<session dir>/workspace.cache`), rewritten whole (temp + rename,
no fsync: losing it costs one full rehash, never a wrong snapshot — a cache that does not parse, or
belongs to another working dir, is dropped).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import orjson

from ..core.checkpoint import Entry, path_bytes, path_text

VERSION = 1
RACY_NS = 1_000_000_000   # covers filesystems with 1 s timestamps


@dataclass(frozen=True, slots=True)
class Stat:
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    st_mode: int

    @classmethod
    def of(cls, st: os.stat_result) -> "Stat":
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


class StatCache:
    def __init__(self, path: str | None, root: str):
        self.path, self.root = path, root
        self.rows: dict[bytes, tuple[Stat | None, Entry]] = {}   # path -> (stat when hashed or None: racy, entry)
        # the ignore rules the rows were taken under: directory -> its .gitignore's stat (None: none),
        # and the stats of the rule files outside the tree; the same rules let a walk skip matching
        # the paths it included last time
        self.dirs: dict[bytes, list[int] | None] = {}
        self.rules: list[list[int] | None] = []
        self._seen: tuple[int, int, int] | None = None            # the file's (ino, size, mtime) we read or wrote

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
        self.rows, self.dirs, self.rules = {}, {}, []
        self._seen = ident
        if ident is None:
            return
        try:
            with open(self.path, "rb") as f:
                doc = orjson.loads(f.read())
            if doc.get("version") != VERSION or doc.get("root") != self.root:
                return
            rows = {}
            for p, st, mode, sha, size, over in doc["rows"]:
                rows[path_bytes(p)] = (Stat(*st) if st else None, Entry(mode, sha, size, over))
            dirs = {path_bytes(p): st for p, st in doc["dirs"]}
            self.rows, self.dirs, self.rules = rows, dirs, doc["rules"]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            self.rows, self.dirs, self.rules = {}, {}, []

    def save(self) -> None:
        if not self.path:
            return
        doc = {"version": VERSION, "root": self.root,
               "rows": [[path_text(p), [st.size, st.mtime_ns, st.ctime_ns, st.ino, st.st_mode] if st else None,
                         e.mode, e.sha, e.size, e.over] for p, (st, e) in self.rows.items()],
               "dirs": [[path_text(p), st] for p, st in self.dirs.items()], "rules": self.rules}
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
        self._seen = self._file_ident()

    def hit(self, rel: bytes, st: Stat) -> Entry | None:
        row = self.rows.get(rel)
        if row is None or row[0] is None or row[0] != st:
            return None
        return row[1]


def file_key(path: str | None = None, *, name: bytes | None = None, dir_fd: int | None = None) -> list[int] | None:
    """What identifies a version of a rules file: [size, mtime_ns, ctime_ns, ino], None if absent."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False) if name is not None else os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
