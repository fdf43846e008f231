"""Putting a working dir back to a snapshot (docs/checkpoints.md "Restore").

`plan(current, target, paths)` says what changes: files to write (new or different content or mode),
paths to delete (tracked now, absent from the target), and what cannot be done (a target file over
the size limit whose content was never stored; a current file over the limit that the target lacks
is kept, since no snapshot holds its content). `apply` carries a plan out through workspace/beneath.py
(no symlink on the way is ever followed): each file is written to a temp name beside it and renamed
over, so a restore killed at any point leaves every file either as it was or as the target has it
(no fsync, as git's checkout: a killed process loses nothing from the page cache; a power loss may).
Ignored paths are never touched, nor is `.git`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..core.checkpoint import MODE_EXEC, MODE_LINK, Change, Entry, changes, path_text
from .beneath import Beneath
from .ignore import IgnoreRules


@dataclass
class Plan:
    write: list[Change] = field(default_factory=list)      # added / modified / mode, toward the target
    delete: list[Change] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)   # {path, why}

    def listing(self) -> list[dict[str, str]]:
        return ([{"path": path_text(c.path), "change": _verb(c)} for c in self.write + self.delete]
                + [{"path": s["path"], "change": "skipped", "why": s["why"]} for s in self.skipped])


def _verb(c: Change) -> str:
    # current -> target: a path the target lacks is deleted, one it adds is created
    return {"added": "delete", "deleted": "create", "modified": "write", "mode": "mode"}[c.kind]


def plan(current: dict[bytes, Entry], target: dict[bytes, Entry], paths: Iterable[bytes] | None = None,
         ignore: IgnoreRules | None = None, exists: Callable[[bytes], bool] | None = None,
         target_partial: bool = False) -> Plan:
    """`target_partial`: the target snapshot did not examine every path (its time budget ran out):
    a path it lacks may simply not have been looked at, so nothing is deleted for it."""
    p = Plan()
    for c in changes(target, current, paths):   # old = target, new = current: what to undo
        want, have = c.old, c.new
        if want is None:   # only in the current tree
            if target_partial:
                p.skipped.append({"path": path_text(c.path), "why": "the target snapshot was partial: kept"})
            elif have is not None and not have.stored:
                p.skipped.append({"path": path_text(c.path), "why": "over the size limit: no snapshot holds it"})
            else:
                p.delete.append(c)
            continue
        if not want.stored and (have is None or have.sha != want.sha):
            p.skipped.append({"path": path_text(c.path), "why": "over the size limit when snapshotted: not stored"})
            continue
        if have is None and ignore is not None and exists is not None and exists(c.path) and \
                ignore.ignored(c.path, False):
            p.skipped.append({"path": path_text(c.path), "why": "ignored now"})
            continue
        p.write.append(c)
    return p


def apply(root: str, p: Plan, read_blob: Callable[[str], bytes], resolver: str = "auto") -> list[str]:
    """Carry out `p` in `root`; returns the paths changed. Deletions first (deepest first: a file
    may give way to a directory), then writes (parents first)."""
    done: list[str] = []
    with Beneath(root, resolver=resolver) as b:
        for c in sorted(p.delete, key=lambda c: c.path.count(b"/"), reverse=True):
            try:
                b.unlink(c.path)
            except FileNotFoundError:
                pass
            done.append(path_text(c.path))
            _prune_empty(b, c.path)
        for c in sorted(p.write, key=lambda c: (c.path.count(b"/"), c.path)):
            want = c.old
            assert want is not None    # plan(): a write is toward a path the target has
            _clear_way(b, c.path)
            data = read_blob(want.sha)
            tmp = _temp_name(c.path)
            if want.mode == MODE_LINK:
                b.symlink(data, tmp, parents=True)
            else:
                b.write_bytes(tmp, data, atomic=False, parents=True,
                              mode=0o777 if want.mode == MODE_EXEC else 0o666)
            try:
                b.rename(tmp, c.path)
            except BaseException:
                b.unlink(tmp)
                raise
            done.append(path_text(c.path))
    return done


def _temp_name(path: bytes) -> bytes:
    head, _, name = path.rpartition(b"/")
    tmp = b".%s.sd-%s.tmp" % (name[:200], os.urandom(6).hex().encode())
    return head + b"/" + tmp if head else tmp


def _clear_way(b: Beneath, path: bytes) -> None:
    """A parent that is a file or symlink now (the target has a directory there) gives way; so
    does a directory where the target has a file (only if empty: anything in it is not ours)."""
    parts = path.split(b"/")
    for i in range(1, len(parts)):
        sub = b"/".join(parts[:i])
        try:
            st = b.lstat(sub)
        except FileNotFoundError:
            return
        if not _is_dir(st.st_mode):
            b.unlink(sub)
            return
    try:
        st = b.lstat(path)
    except FileNotFoundError:
        return
    if _is_dir(st.st_mode):
        b.rmdir(path)


def _is_dir(mode: int) -> bool:
    return stat.S_ISDIR(mode)


def _prune_empty(b: Beneath, path: bytes) -> None:
    """Remove the directories a deletion left empty (never the root)."""
    parts = path.split(b"/")[:-1]
    while parts:
        try:
            if b.listdir(b"/".join(parts)):
                return
            b.rmdir(b"/".join(parts))
        except OSError:
            return
        parts.pop()
