"""A session moved to another working dir on purpose (a rebind): session.json names the new dir, and
the session meta `working_dir_rebinds` records each move as {from, to, at} (committed with the next
turn).

A resume with `allow_working_dir_mismatch` into another dir while the recorded one is gone (the
project was renamed or moved) rebinds through here at every entry point (`SessionStore.resume_session`:
the library's run_task / session_context, the daemon's session/open and session/resume), so the
next turn's tools run in the new dir. While the recorded dir still exists such a resume only opens
the session (an editor reading it from elsewhere); `rebind=True` (session/open's `rebind`, what
`sessiondag run --allow-working-dir-mismatch` sends) always moves it."""

from __future__ import annotations

import os
import time
from typing import ContextManager, Protocol

import orjson

from ..core.graph import Graph
from .durable_files import write_file_atomic

REBINDS_KEY = "working_dir_rebinds"


def moved_away(recorded: str | None, wanted: str | None) -> bool:
    """Does an opted-in resume into `wanted` follow a project moved away from `recorded`?"""
    return (recorded is not None and wanted is not None and wanted != recorded
            and not os.path.isdir(recorded) and os.path.isdir(wanted))


class Rebound(Protocol):
    """What a rebind uses of its Session (naming store/session.py's class: an import cycle)."""

    @property
    def path(self) -> str: ...

    @property
    def info(self) -> dict[str, object]: ...   # session.json, rewritten in place

    @property
    def lock(self) -> ContextManager[object]: ...

    @property
    def graph(self) -> Graph: ...

    def set_meta(self, key: str, value: object) -> None: ...


def rebind(s: Rebound, new_dir: str) -> dict[str, object] | None:
    """Move session `s` to `new_dir`; the recorded entry, or None if it already is there."""
    with s.lock:
        old = s.info.get("working_dir")
        if old == new_dir:
            return None
        entry = {"from": old, "to": new_dir, "at": time.time()}
        history = list(s.graph.extra.get(REBINDS_KEY) or [])
        s.set_meta(REBINDS_KEY, history + [entry])
        info = {**s.info, "working_dir": new_dir}
        write_file_atomic(os.path.join(s.path, "session.json"), orjson.dumps(info, option=orjson.OPT_INDENT_2))
        s.info.clear()
        s.info.update(info)
    return entry
