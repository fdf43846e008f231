"""Session summaries for people picking a session up again: title, last activity, turns, last
status, branch, cost (the usage ledger's total, cli/usage.py) — used by `sessions list`, `resume` and `run --continue`.

The title is the session meta `title` when set (`sessions name ID TITLE`), else the first user
message. Last activity is the newest write to the session directory (journal or git refs).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, TypedDict, cast

from ..core.model import ROOT
from .usage import session_cost

from ..sync.summary import TITLE_KEY as TITLE_KEY, TITLE_MAX as TITLE_MAX  # noqa: F401 - one title rule
from ..sync.summary import first_user_text as first_user_text, one_line as one_line

if TYPE_CHECKING:
    from dulwich.objects import Commit

    from ..core.graph import Graph
    from ..store.handles import SessionStore
    from ..store.session import Session


class _Unreadable(TypedDict, total=False):
    error: str


class Summary(_Unreadable):
    """One row of `sessions list` (its --json form too); `error` only when not `readable`."""
    session_id: str
    working_dir: str | None
    title: str
    last_activity: float | None
    created_at: float | None
    turns: int
    last_status: str | None
    branch: str | None
    head_id: str | None
    cost: str | None
    readable: bool


def summary(store: SessionStore, sid: str, *, release: bool = False) -> Summary:
    """One row; an unreadable session is a row with `readable: false` and its reason."""
    row: Summary = {"session_id": sid, "working_dir": None, "title": "", "last_activity": store.last_write(sid),
                           "created_at": None, "turns": 0, "last_status": None, "branch": None, "head_id": None,
                           "cost": None, "readable": True}
    try:
        s = store.session(sid)
        g = s.graph
    except Exception as e:  # noqa: BLE001 - listing shows broken sessions instead of failing
        row.update({"readable": False, "error": str(e)})
        return row
    try:
        _fill(row, s, g)
    finally:
        if release:
            store.release(sid)  # loaded only to be summarized: listing thousands holds no fds
    return row


def _fill(row: Summary, s: Session, g: Graph) -> None:
    head = g.nodes.get(g.head_id)
    newest = max([c.created_at for c in g.nodes.values() if c.id != ROOT] + [_last_commit_time(s)])
    if newest:  # the last node or commit, not when the files were last touched (a clone rebuilds them)
        row["last_activity"] = newest
    row.update({"working_dir": s.info.get("working_dir"), "created_at": s.info.get("created_at"),
                "title": one_line(g.extra.get(TITLE_KEY) or first_user_text(g)),
                "turns": _turns_on_head(s),
                "last_status": head.status if head is not None and head.id != ROOT else None,
                "branch": g.branch_names.get(g.head_id), "head_id": g.head_id, "cost": session_cost(s)})


def _turns_on_head(s: Session) -> int:
    """The turns of the current branch: the highest [N] `sessions log` shows, the N `--edit N`,
    `--branch-from N` and the chat's `/fork N` take (one numbering everywhere)."""
    from ..core.errors import SessionDagError
    try:   # turns.user_turns' rule (that module imports this one through common)
        return sum(1 for c in s.get_branch() if c.role == "user" and c.caller == ROOT and c.predecessor is not None)
    except SessionDagError:  # a broken chain: the listing still shows the session
        return 0


def _last_commit_time(s: Session) -> float:
    """When the session's newest commit (a turn, a checkout, a rename) was made; 0.0 if unknown."""
    try:
        sha = s.git.head()
        return float(cast("Commit", s.git.repo[sha]).commit_time) if sha else 0.0  # the head is a commit
    except Exception:  # noqa: BLE001 - a listing shows what it can
        return 0.0


def session_ids(store: SessionStore) -> list[str]:
    try:
        return [n for n in os.listdir(store.sessions_dir) if not n.startswith(".")]
    except OSError:
        return []


def summaries(store: SessionStore, working_dir: str | None = None) -> list[Summary]:
    """Rows newest first; with `working_dir`, only the sessions recorded for that dir."""
    # the store filters by working dir itself (an unreadable session is nobody's)
    ids = [r["session_id"] for r in store.list_sessions(working_dir)] if working_dir else session_ids(store)
    rows = [summary(store, sid, release=True) for sid in ids]
    # git keeps whole seconds, so within one second the newest write to the session dir decides (a rename
    # just after another session's turn sorts first)
    written = {r["session_id"]: store.last_write(r["session_id"]) or 0.0 for r in rows}
    rows.sort(key=lambda r: (int(r["last_activity"] or 0), written[r["session_id"]]), reverse=True)
    return rows


def ago(ts: float | None, now: float | None = None) -> str:
    if not ts:
        return "?"
    d = max(0, int((now or time.time()) - ts))
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if d >= n:
            return f"{d // n}{unit} ago"
    return f"{d}s ago"


HEADER = ("ID", "TITLE", "LAST ACTIVITY", "TURNS", "STATUS", "BRANCH", "COST")


def table(rows: list[Summary], *, show_dir: bool = False) -> list[str]:
    """The human table, header first."""
    cols = [HEADER + (("WORKING DIR",) if show_dir else ())]
    for r in rows:
        title = r["title"] if r["readable"] else f"[unreadable: {one_line(r.get('error'), 40)}]"
        cols.append((r["session_id"], one_line(title, 48), ago(r["last_activity"]), str(r["turns"]),
                     r["last_status"] or "-", r["branch"] or "-", r["cost"] or "-") + ((r["working_dir"] or "-",) if show_dir else ()))
    widths = [max(len(c[i]) for c in cols) for i in range(len(cols[0]))]
    return ["  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip() for c in cols]
