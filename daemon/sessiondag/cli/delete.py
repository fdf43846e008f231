"""`sessions delete`: asks first (or --yes), and refuses while a daemon (or any other process) has the
session open: the store's reset refuses with SessionBusyError naming the holder (store/presence.py)."""

from __future__ import annotations

import sys
from typing import Any


def _confirm(sid: str, title: str) -> bool | None:
    """True/False from the person at the terminal; None when nobody can be asked."""
    if not sys.stdin.isatty():
        return None
    sys.stderr.write(f"delete session {sid}" + (f" ({title})" if title else "") + "? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def delete(store: Any, sid: str, *, yes: bool, prog: str) -> int:
    from ..core.errors import SessionBusyError
    from .catalog import summary
    try:
        store.check_not_open_elsewhere(sid)  # refused before anybody is asked
    except SessionBusyError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    if not yes:
        ok = _confirm(sid, summary(store, sid, release=True)["title"])
        if ok is None:
            print(f"{prog}: not a terminal, so nobody can confirm; pass --yes to delete {sid}", file=sys.stderr)
            return 2
        if not ok:
            print("kept")
            return 1
    try:
        found = store.reset_session(sid)
    except SessionBusyError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    if not found:
        print(f"{prog}: no session {sid}", file=sys.stderr)
        return 1
    print(f"deleted {sid}")
    return 0
