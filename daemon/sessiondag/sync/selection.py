"""Which sessions a `sync push|pull` means: `--session ID`, `--all`, or `--working-dir DIR` (for a
push: the local sessions recorded for that dir; for a pull: the remote's sessions whose
working-dir identity is that dir's project, or whose recorded path is that dir)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from . import identity
from .errors import SyncError

if TYPE_CHECKING:
    from ..store.handles import SessionStore
    from .summary import RemoteSession


def local_ids(store: SessionStore, *, session: str | None, all_: bool, working_dir: str | None) -> list[str]:
    if session:
        return [session]
    if working_dir:
        return sorted(r["session_id"] for r in store.list_sessions(os.path.realpath(working_dir)))
    if all_:
        return sorted(r["session_id"] for r in store.list_sessions())
    raise SyncError("say which sessions: --session ID, --all or --working-dir DIR")


def remote_ids(rows: list[RemoteSession], *, session: str | None, all_: bool, working_dir: str | None) -> list[str]:
    if session:
        return [session]
    if working_dir:
        wd = os.path.realpath(working_dir)
        here = identity.identify(wd)
        return sorted(r["session_id"] for r in rows
                      if (here and here.get("kind") == "git" and r.get("identity") == here) or r.get("working_dir") == wd)
    if all_:
        return sorted(r["session_id"] for r in rows)
    raise SyncError("say which sessions: --session ID, --all or --working-dir DIR")
