"""`sessions delete` / `sessions reset`: asks first (or --yes). A session the daemon of this state dir
holds open (after a turn through it, until its idle eviction) is deleted through that daemon
(`session/reset`: it closes the session, tells its subscribers, and removes it); a session another
process holds is refused, naming the holder (store/presence.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sessiondag_client.discovery import DaemonRecord

    from ..core.errors import SessionBusyError
    from ..store.handles import SessionStore



def _confirm(sid: str, title: str) -> bool | None:
    """True/False from the person at the terminal; None when nobody can be asked."""
    if not sys.stdin.isatty():
        return None
    sys.stderr.write(f"delete session {sid}" + (f" ({title})" if title else "") + "? [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline().strip().lower()
    except KeyboardInterrupt:
        answer = ""
        sys.stderr.write("\n")
    return answer in ("y", "yes")


def _daemon_holding(store: SessionStore, busy: SessionBusyError) -> DaemonRecord | None:
    """The daemon of this state dir when it is (one of) the holder(s) of the session."""
    from sessiondag_client.discovery import find_daemon
    info = find_daemon(store.state_dir)
    if info is None or (busy.holders and info.get("pid") not in busy.holders):
        return None
    return info


def _reset_through(info: DaemonRecord, sid: str) -> bool:
    from sessiondag_client import SyncClient
    with SyncClient.connect(info["socket"], client_name="sessiondag sessions delete") as c:
        return bool(c.call("session/reset", {"session_id": sid})["reset"])


def delete(store: SessionStore, sid: str, *, yes: bool, prog: str) -> int:
    from ..core.errors import SessionBusyError
    from .catalog import summary
    daemon = None
    try:
        store.check_not_open_elsewhere(sid)  # refused before anybody is asked
    except SessionBusyError as e:
        daemon = _daemon_holding(store, e)
        if daemon is None:
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
        if daemon is not None:
            store.release(sid)
            found = _reset_through(daemon, sid)
        else:
            found = store.reset_session(sid)
    except SessionBusyError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # the daemon refused (a turn runs): one line
        print(f"{prog}: {getattr(e, 'message', None) or e}", file=sys.stderr)
        return 1
    if not found:
        print(f"{prog}: no session {sid}", file=sys.stderr)
        return 1
    print(f"deleted {sid}" + (" (through the daemon that held it)" if daemon is not None else ""))
    return 0
