"""What a `sessiondag run` will do, resolved before anything is written (cli/run.py): which session
(`--continue`, `--session ID [--new]`), which fork point (`--retry`, `--edit N`, `--branch-from`),
which text, whether the fork also restores the files, and whether a resume from another working dir
is allowed (the flag, a `[working_dirs] remap` rule of the settings: cli/remap.py, or a checkout of
the same project: sync/identity.py). A refusal raises NoSession, UsageError or SessionResumeError."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, TypedDict

from .common import NoSession, UsageError

if TYPE_CHECKING:
    from ..store.handles import SessionStore


class RunPlan(TypedDict):
    """A run's plan: its session (None: a new one), its text, where it forks and how."""
    session_id: str | None
    task: str | None
    branch_from: str | None
    restore_files: bool
    creates: bool


def plan(store: SessionStore, args: argparse.Namespace, workdir: str) -> RunPlan:
    """Which session, which fork point and which text: resolved before anything is written."""
    from . import turns
    from .catalog import summaries
    from .common import resolve_session
    sid = None
    if args.cont:
        rows = [r for r in summaries(store, workdir) if r["readable"]]
        if not rows:
            raise NoSession(f"for working dir {workdir}")
        sid = rows[0]["session_id"]
    elif args.session:
        try:
            sid = resolve_session(store, args.session)
        except NoSession:
            if not args.new:
                raise
            from ..core.ids import check_session_id
            sid = check_session_id(args.session)
    task, branch_from = args.task, None
    if sid is not None and store.exists(sid):
        s = store.session(sid)
        if args.retry:
            branch_from, text = turns.retry_last(s)
            task = task or text
        elif args.edit is not None:
            branch_from = turns.edit_point(s, args.edit)
        elif args.branch_from:
            branch_from = turns.resolve_point(s, args.branch_from)
        recorded = s.info.get("working_dir")
        if recorded != os.path.realpath(workdir):
            from .remap import remapped
            if remapped(recorded, os.path.realpath(workdir), store.settings()):
                args.allow_working_dir_mismatch = True  # a configured remap: rebind, recorded
            from ..sync.identity import KEY, same_project
            if same_project(s.graph.extra.get(KEY), workdir):
                args.allow_working_dir_mismatch = True  # a checkout of the same project (sync): rebind, recorded
            if not args.allow_working_dir_mismatch:
                from ..core.errors import SessionResumeError
                raise SessionResumeError(sid, "working_dir_mismatch",
                                         f"recorded {recorded!r}, asked {os.path.realpath(workdir)!r}")
    elif args.branch_from:
        raise UsageError(f"--branch-from {args.branch_from}: the session does not exist yet")
    return {"session_id": sid, "task": task, "branch_from": branch_from,
            "restore_files": restore_files(args, branch_from, store.settings().restore_files), "creates": sid is None or not store.exists(sid)}


def restore_files(args: argparse.Namespace, branch_from: str | None, mode: str) -> bool:
    """Whether the fork also restores the files: the flag, else the setting (ask: in a terminal)."""
    if branch_from is None:
        return False
    if args.restore_files is not None:
        flag: bool = args.restore_files  # --restore-files / --no-restore-files
        return flag
    if mode != "ask":
        return mode == "on"
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    sys.stderr.write(f"Restore the files to how they were at {branch_from[:12]} too? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")
