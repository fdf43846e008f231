"""Restore and diff over workspace checkpoints (docs/checkpoints.md): the one place that puts the
store's checkpoints, the working dir (workspace/) and the turn lock together. Used by the daemon's
`session/restore` / `session/diff` and by `sessiondag sessions restore|diff` without a daemon.

Everything runs in a worker thread, under the session lock, with the session's turn lock taken
without waiting (a turn running here or in another process: TurnRunningError).
"""

from __future__ import annotations

import difflib
import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from ..core.checkpoint import RESTORED_KEY, UNDO_KEY, Change, Entry, WorkspaceState, changes, path_bytes, path_text, summary
from ..core.errors import (InvalidNodeError, NoCheckpointError, PathRefusedError, TurnRunningError,
                           WorkingDirUnboundError, WorkspaceDirtyError)
from ..store import checkpoints
from ..workspace import restore as files
from ..workspace.beneath import Beneath
from ..workspace.ignore import IgnoreRules
from .before_call import files_before
from .turns import session_turn_lock

if TYPE_CHECKING:
    from ..store.session import Session

WHAT = ("files", "conversation", "both")
MAX_DIFF_BYTES = 1 << 20     # a file bigger than this is reported, not diffed
BINARY_PROBE = 8000


@contextmanager
def no_turn_running(s: Session) -> Iterator[None]:
    """Hold the session's turn lock (runtime/turns.py) for the block, or refuse at once when a turn
    holds it in another thread or process. The thread of a running turn passes (a fork that
    restores the files first)."""
    lock = session_turn_lock(s)
    if not lock.try_acquire():
        raise TurnRunningError(s.id)
    try:
        yield
    finally:
        lock.release()


def _working_dir(s: Session) -> str:
    wd: str | None = s.info.get("working_dir")
    if not wd or not os.path.isdir(wd):
        raise WorkingDirUnboundError(s.id, wd)
    return wd


def _snapshot_now(s: Session) -> tuple[str, WorkspaceState]:
    taker = s.snapshots(s) if s.snapshots is not None else None
    if taker is None:
        raise NoCheckpointError("current", "checkpoints are off for this session (workspace.checkpoints)")
    return checkpoints.write(s.git, taker, s.settings().pack_compression)


def _last(s: Session) -> dict[bytes, Entry] | None:
    head = s.git.head()
    ck = s.git.workspace(head) if head is not None else None
    return checkpoints.read(s.git, ck)[0] if ck else None


def restore(s: Session, node_id: str | None, what: str = "files", paths: list[str] | None = None,
            dry_run: bool = False, force: bool = False, undo: bool = False,
            before: bool = False) -> dict[str, Any]:
    """Put the files and/or the conversation back to `node_id` (or, with undo, the files back to
    before the last restore; with `before`, the files as they were just before node_id ran:
    before_call.py). Returns {target, files: {changes, skipped, dirty, undo}, head_id}."""
    if what not in WHAT:
        raise InvalidNodeError(f"what is one of {', '.join(WHAT)}")
    if undo and (what != "files" or before):
        raise InvalidNodeError("undo restores files only, to the last undo point")
    if node_id is None and not undo:
        raise InvalidNodeError("a restore needs a node_id (or undo)")
    out: dict[str, Any] = {"dry_run": dry_run, "what": what}
    with no_turn_running(s), s.lock:
        if what in ("conversation", "both") and node_id is not None:
            s.graph.check_checkout(node_id)   # refused before any file moves
        if what in ("files", "both"):
            out["files"] = _restore_files(s, node_id, paths, dry_run, force, undo, before)
            out["target"] = out["files"]["target"]
        if what in ("conversation", "both") and not dry_run:
            assert node_id is not None  # None only for an undo, which restores files only
            s.checkout(node_id)
            s.commit_turn(f"restore: conversation to {node_id}\n")
        out["head_id"] = s.head_id
    return out


def _restore_files(s: Session, node_id: str | None, paths: list[str] | None, dry_run: bool, force: bool,
                   undo: bool, before: bool = False) -> dict[str, Any]:
    wd = _working_dir(s)
    built = None
    if undo:
        points = s.graph.extra.get(UNDO_KEY) or []
        if not points:
            raise NoCheckpointError("undo", "no restore to undo")
        target_id = points[-1]["id"]
    elif before:
        assert node_id is not None  # None only for an undo
        target, built = files_before(s, node_id)
        target_id, info = built["start"], {"partial": built["partial"]}
    else:
        assert node_id is not None  # None only for an undo
        target_id = checkpoints.resolve(s, node_id)
    if built is None:
        target, info = checkpoints.read(s.git, target_id)
    last = _last(s)
    ck, state = _snapshot_now(s)
    current = state.entries
    dirty = [path_text(c.path) for c in changes(last, current)] if last is not None else []
    if dirty and not force and not dry_run:
        raise WorkspaceDirtyError(s.id, dirty)
    within = [path_bytes(p.strip("/")) for p in paths] if paths else None
    assert s.snapshots is not None  # _snapshot_now refused a session without checkpoints
    taker = s.snapshots(s)
    # the store's Taker cannot name workspace's IgnoreRules (store sits below workspace): read here
    ignore: IgnoreRules | None = getattr(taker, "ignore") if taker is not None else None
    with Beneath(wd, resolver=s.settings().beneath) as b:
        def exists(p: bytes) -> bool:
            try:
                return b.exists(p)
            except PathRefusedError:
                return True
        plan = files.plan(current, target, within, ignore, exists,
                          target_partial=bool(info.get("partial")))
    result = {"target": target_id, "changes": plan.listing(), "dirty": dirty, "undo": None}
    if built is not None:    # {start, applied, unknown}: what "just before" was built from
        result["before"] = {k: built[k] for k in ("start", "applied", "unknown")}
    if dry_run:
        return result
    undo_point = s.record_checkpoint(UNDO_KEY, {"restored_to": node_id, "target": target_id},
                                     taken=(ck, summary(state, ck)))
    result["undo"] = undo_point
    result["written"] = files.apply(wd, plan, s.git.get_blob, s.settings().beneath)
    # the files as the restore left them are the last snapshot now (what the next dirty check compares with)
    s.record_checkpoint(RESTORED_KEY, {"restored_to": node_id, "target": target_id})
    s.publish_restored(node_id, target_id, [c["path"] for c in result["changes"] if c["change"] != "skipped"])
    return result


# --- diff ------------------------------------------------------------------------------------
def diff(s: Session, a: str | None, b: str, paths: list[str] | None = None, texts: bool = False) -> dict[str, Any]:
    """Files that differ between the snapshots of nodes `a` and `b` (b "current": the working dir
    now), as unified diffs (binary and oversized files reported, not dumped), and the conversation
    nodes on one branch and not the other. `a` None: the turn before b's. `texts`: each text file's
    two versions too (old_text, new_text: what an editor's diff view shows side by side)."""
    with s.lock:
        if b == "current":
            _working_dir(s)
            b_id, _ = _snapshot_now(s)
            b_node = s.head_id
        else:
            b_id, b_node = checkpoints.resolve(s, b), b
        if a is None:
            a = checkpoints.previous_turn(s, b_node)
        a_id = checkpoints.resolve(s, a)
        old, _ = checkpoints.read(s.git, a_id)
        new, _ = checkpoints.read(s.git, b_id)
        within = [path_bytes(p.strip("/")) for p in paths] if paths else None
        out = [_file_diff(s, c, texts) for c in changes(old, new, within)]
        left = {c.id for c in s.get_branch(a)}
        right = [c.id for c in s.get_branch(b_node)]
        only_b = [i for i in right if i not in left]
        right_set = set(right)
        only_a = [c.id for c in s.get_branch(a) if c.id not in right_set]
        return {"from": a, "to": b, "from_checkpoint": a_id, "to_checkpoint": b_id, "files": out,
                "nodes": {"only_in_from": only_a, "only_in_to": only_b}}


def _file_diff(s: Session, c: Change, with_texts: bool = False) -> dict[str, Any]:
    path = path_text(c.path)
    d: dict[str, Any] = {"path": path, "change": c.kind,
                         "old_mode": f"{c.old.mode:o}" if c.old else None,
                         "new_mode": f"{c.new.mode:o}" if c.new else None,
                         "old_blob": c.old.sha if c.old else None, "new_blob": c.new.sha if c.new else None}
    if c.kind == "mode":
        return d
    sides = []
    for e in (c.old, c.new):
        if e is None:
            sides.append(b"")
        elif not e.stored:
            d["not_stored"] = True
            return d
        else:
            sides.append(s.git.get_blob(e.sha))
    if any(len(x) > MAX_DIFF_BYTES for x in sides):
        d["too_big"] = True
        d["sizes"] = [len(x) for x in sides]
        return d
    if any(b"\0" in x[:BINARY_PROBE] for x in sides):
        d["binary"] = True
        d["sizes"] = [len(x) for x in sides]
        return d
    try:
        texts = [x.decode("utf-8") for x in sides]
    except UnicodeDecodeError:
        d["binary"] = True
        d["sizes"] = [len(x) for x in sides]
        return d
    if with_texts:
        d["old_text"], d["new_text"] = texts
    a_name = "/dev/null" if c.old is None else "a/" + path
    b_name = "/dev/null" if c.new is None else "b/" + path
    d["diff"] = "".join(difflib.unified_diff(texts[0].splitlines(keepends=True), texts[1].splitlines(keepends=True),
                                             a_name, b_name))
    return d
