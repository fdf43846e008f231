"""What `sessiondag gc` may delete from a state dir, and the packing of what it keeps.

A session is a candidate when it is older than `older_than_days` (its last write) and/or not among
the `keep` most recent ones. A candidate with unpushed work — a commit no remote's tracking ref
(`refs/sessiondag-remotes/*/main`, layout.py) contains, or journal records not yet committed — is
kept unless `force`: deleting it would lose what exists nowhere else. A session another process has
open is kept (the store refuses the reset). Every kept session is packed: its loose objects and
small packs into one pack by `git gc --prune=never` under the session lock (refs left loose, so the
last-write time a later gc reads does not move; nothing unreachable is
dropped: a body spilled for a turn not yet committed stays), or dulwich's loose-object packing when
no git is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from dulwich.refs import Ref
from dulwich.repo import Repo

from ..core.errors import SessionBusyError
from . import layout
from .history import MAIN, is_ancestor

if TYPE_CHECKING:
    from ..store.handles import SessionStore


class Packed(TypedDict):
    before: int
    after: int


class VerdictDict(TypedDict):
    session_id: str
    action: str
    reason: str
    last_activity: float
    packed: Packed | None


@dataclass
class Verdict:
    session_id: str
    action: str          # removed | would_remove | kept
    reason: str
    last_activity: float
    packed: tuple[int, int] | None = None   # git dir bytes before, after

    def to_dict(self) -> VerdictDict:
        return {"session_id": self.session_id, "action": self.action, "reason": self.reason,
                "last_activity": self.last_activity,
                "packed": {"before": self.packed[0], "after": self.packed[1]} if self.packed else None}


def unpushed(store: SessionStore, sid: str) -> str | None:
    """Why the session holds work no remote has (None: every commit is on some remote)."""
    s = store.session(sid)
    try:
        if s.open_turn:
            return "journal records not committed yet"
        repo = Repo(os.path.join(s.path, "git"))
        try:
            head = repo.refs[MAIN] if MAIN in repo.refs else None
            if head is None:
                return None
            tracked = [v for k, v in repo.refs.as_dict(Ref(layout.TRACKING.rstrip(b"/"))).items() if k.endswith(b"/main")]
            if not tracked:
                return "never pushed"
            if not any(is_ancestor(repo.object_store, head, t) for t in tracked):
                return "commits not pushed to any remote"
            return None
        finally:
            repo.close()
    finally:
        store.release(sid)


def _size(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def pack(store: SessionStore, sid: str) -> tuple[int, int]:
    s = store.session(sid)
    git_dir = os.path.join(s.path, "git")
    try:
        before = _size(git_dir)
        with s.lock:
            if shutil.which("git"):
                subprocess.run(["git", "-C", git_dir, "-c", "gc.packRefs=false", "gc", "--quiet", "--prune=never"], check=True,
                               capture_output=True, timeout=3600)
            else:
                repo = Repo(git_dir)
                try:
                    repo.object_store.pack_loose_objects()
                finally:
                    repo.close()
            s.git.refresh()  # the packs we had open may be gone
        return before, _size(git_dir)
    finally:
        store.release(sid)


def collect(store: SessionStore, *, older_than_days: float | None, keep: int | None, dry_run: bool,
            force: bool) -> list[Verdict]:
    ids = sorted(n for n in os.listdir(store.sessions_dir) if not n.startswith("."))
    when = {sid: store.last_write(sid) for sid in ids}
    newest = sorted(ids, key=lambda i: when[i], reverse=True)
    kept_by_count = set(newest[:keep]) if keep is not None else set()
    cutoff = time.time() - older_than_days * 86400 if older_than_days is not None else None
    out = []
    for sid in newest:
        if keep is None and cutoff is None:
            out.append(Verdict(sid, "kept", "nothing selected (no --older-than, no --keep)", when[sid]))
            continue
        reasons = []
        if keep is not None and sid not in kept_by_count:
            reasons.append(f"not among the {keep} most recent")
        if cutoff is not None and when[sid] < cutoff:
            reasons.append(f"older than {older_than_days:g} days")
        if len(reasons) < (keep is not None) + (cutoff is not None):   # both conditions, when both given
            out.append(Verdict(sid, "kept", "recent", when[sid]))
            continue
        why = " and ".join(reasons)
        try:
            held = None if force else unpushed(store, sid)
        except Exception as e:  # an unreadable session is not ours to judge here: kept, said why
            out.append(Verdict(sid, "kept", f"unreadable ({e}); not removed", when[sid]))
            continue
        if held:
            out.append(Verdict(sid, "kept", f"{why}, but {held} (--force removes it)", when[sid]))
            continue
        if dry_run:
            out.append(Verdict(sid, "would_remove", why, when[sid]))
            continue
        try:
            store.reset_session(sid)
        except SessionBusyError as e:
            out.append(Verdict(sid, "kept", f"{why}, but open elsewhere: {e}", when[sid]))
            continue
        out.append(Verdict(sid, "removed", why + (" (forced)" if force else ""), when[sid]))
    if not dry_run:
        for v in out:
            if v.action == "kept":
                try:
                    v.packed = pack(store, v.session_id)
                except Exception as e:  # packing is housekeeping: said, never fatal
                    v.reason += f"; not packed: {e}"
    return out
