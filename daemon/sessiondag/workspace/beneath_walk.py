"""Walking beneath a root (workspace/beneath.py): every entry under a directory, bounded and never
entering a symlink (`Beneath.walk`), and a path with its symlinks resolved as long as each target stays
inside the root (`Beneath.through_links`). Both open through the `Beneath` they are given, so every
rule of beneath.py holds on the way; this module adds the bounds and the link arithmetic.
"""

from __future__ import annotations

import os
import stat
from typing import Iterator, Protocol

from ..core.errors import PathRefusedError

from .names import Entry, kind_of, label, shown, split

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
MAX_WALK_ENTRIES = 200_000
MAX_WALK_DEPTH = 64


class _Tree(Protocol):
    """What the walks use of a `Beneath`."""

    root: str

    def _open_parts(self, parts: list[bytes], flags: int, mode: int = 0o666) -> int: ...

    def _refuse_for(self, path: str | bytes, err: OSError, parts: list[bytes]) -> BaseException: ...

    def _parent(self, path: str | bytes, *, make: bool = False) -> tuple[int, bytes]: ...

    def lstat(self, path: str | bytes) -> os.stat_result: ...


def entries(fd: int) -> list[Entry]:
    """The entries of an open directory, sorted by name (bytes); kinds from the entries, not followed."""
    out = []
    with os.scandir(fd) as it:
        for de in it:
            try:
                kind = kind_of(de.stat(follow_symlinks=False).st_mode)
            except FileNotFoundError:
                continue        # gone meanwhile
            out.append(Entry(os.fsencode(de.name), kind))
    out.sort(key=lambda e: e.name)
    return out


def walk(tree: _Tree, path: str | bytes = ".", *, skip: set[bytes] | frozenset[bytes] = frozenset(),
         max_entries: int = MAX_WALK_ENTRIES, max_depth: int = MAX_WALK_DEPTH) -> Iterator[tuple[bytes, Entry]]:
    """Every entry under `path` (depth first, sorted), as (its path relative to the root, entry).
    Directories named in `skip` are neither yielded nor entered; symlinks are yielded (kind
    "symlink") and never entered. A directory that vanishes or becomes a symlink meanwhile is
    skipped. More than max_entries entries or max_depth levels: PathRefusedError `too_many`."""
    base = split(path)
    stack: list[tuple[list[bytes], int]] = [(base, 0)]
    seen = 0
    while stack:
        parts, depth = stack.pop()
        try:
            fd = tree._open_parts(parts, DIR_FLAGS)
        except OSError as e:
            if parts == base:
                raise tree._refuse_for(path, e, parts) from None
            continue
        try:
            found = entries(fd)
        finally:
            os.close(fd)
        subdirs = []
        for ent in found:
            if ent.kind == "dir" and ent.name in skip:
                continue
            seen += 1
            if seen > max_entries:
                raise PathRefusedError(shown(b"/".join(base) or b"."), f"more than {max_entries} entries",
                                       "too_many")
            yield b"/".join(parts + [ent.name]), ent
            if ent.kind == "dir":
                subdirs.append(parts + [ent.name])
        if subdirs and depth + 1 > max_depth:
            raise PathRefusedError(shown(b"/".join(base) or b"."), f"deeper than {max_depth} levels",
                                   "too_many")
        stack.extend((p, depth + 1) for p in reversed(subdirs))


def through_links(tree: _Tree, path: str | bytes, *, max_links: int = 40) -> bytes:
    """`path` with every symlink on it replaced by its target, as long as each target stays inside
    the root (lexically: a relative target, `..` not above the root, or an absolute one under the
    root's real path); else PathRefusedError `symlink`. The result names no symlink *now*; the
    operations on it still refuse any symlink, so a swap meanwhile cannot lead out, only fail."""
    todo = split(path)
    done: list[bytes] = []
    real_root = os.fsencode(os.path.realpath(tree.root))
    links = 0
    while todo:
        name = todo.pop(0)
        try:
            st = tree.lstat(b"/".join(done + [name]))
        except (FileNotFoundError, NotADirectoryError):
            return b"/".join(done + [name] + todo)
        if not stat.S_ISLNK(st.st_mode):
            done.append(name)
            continue
        links += 1
        pfd, last = tree._parent(b"/".join(done + [name]))
        try:
            target = os.readlink(last, dir_fd=pfd)
        finally:
            os.close(pfd)
        refused = PathRefusedError(label(path), f"a symlink on the way leads outside the working dir "
                                   f"({label(target)})", "symlink")
        if links > max_links:
            raise refused
        if target.startswith(b"/"):
            if target != real_root and not target.startswith(real_root + b"/"):
                raise refused
            base, rest = [], target[len(real_root):]
        else:
            base, rest = list(done), target
        for part in rest.split(b"/"):
            if part == b"..":
                if not base:
                    raise refused
                base.pop()
            elif part and part != b".":
                base.append(part)
        done, todo = [], base + todo
    return b"/".join(done) or b"."
