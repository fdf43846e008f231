"""`sessions delete`: asks first (or --yes), and refuses while a daemon has the session open — the
daemon would keep acknowledging writes to a session that no longer exists."""

from __future__ import annotations

import sys
from typing import Any


def _open_in_daemon(store: Any, sid: str) -> dict[str, Any] | None:
    """The status of the daemon serving this state dir when it has `sid` open, else None."""
    from sessiondag_client import SyncClient
    from sessiondag_client.discovery import find_daemon
    info = find_daemon(store.state_dir)
    if info is None:
        return None
    try:
        with SyncClient.connect(info["socket"], client_name="sessiondag sessions delete") as c:
            st = c.status()
    except OSError:
        return None
    return st if sid in st.get("sessions_open", ()) else None


def _confirm(sid: str, title: str) -> bool | None:
    """True/False from the person at the terminal; None when nobody can be asked."""
    if not sys.stdin.isatty():
        return None
    sys.stderr.write(f"delete session {sid}" + (f" ({title})" if title else "") + "? [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def delete(store: Any, sid: str, *, yes: bool, prog: str) -> int:
    from .catalog import summary
    st = _open_in_daemon(store, sid)
    if st is not None:
        print(f"{prog}: session {sid} is open in the daemon (pid {st['pid']}); close it there or stop the "
              f"daemon (sessiondag daemon stop) first", file=sys.stderr)
        return 1
    if not yes:
        ok = _confirm(sid, summary(store, sid)["title"])
        if ok is None:
            print(f"{prog}: not a terminal, so nobody can confirm; pass --yes to delete {sid}", file=sys.stderr)
            return 2
        if not ok:
            print("kept")
            return 1
    if not store.reset_session(sid):
        print(f"{prog}: no session {sid}", file=sys.stderr)
        return 1
    print(f"deleted {sid}")
    return 0
