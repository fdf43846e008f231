"""The per-session summary a remote holds beside each session's commits
(`refs/sessiondag/<id>/summary`, one small JSON blob), so `sync list` shows a remote's sessions
without fetching a single node:

    {"session_id", "title", "last_activity", "created_at", "working_dir", "identity",
     "commit", "turn", "nodes"}

Read back from a remote, a summary is hostile: `parse` keeps only the known fields of the right
types (strings cut to a bound), and one whose id is not its ref's is dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from ..context.content import parts_of, text_of
from ..core import wire_types
from ..core.model import ROOT
from .identity import KEY as IDENTITY_KEY

if TYPE_CHECKING:
    from ..core.graph import Graph
    from ..store.session import Session

TITLE_KEY = "title"
TITLE_MAX = 80
_TEXT_MAX = 4096


# a row of `sync list` / remote/list: a remote session's summary blob, each field checked (its type,
# or null), `commit` the remote's ref (rpc_schema remote/list; core/wire_types.py, generated)
RemoteSession = wire_types.RemoteListResultSessionsItem


def one_line(text: object, n: int = TITLE_MAX) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def first_user_text(g: Graph) -> str:
    firsts = [c for c in g.nodes.values() if c.role == "user" and c.caller == ROOT and c.predecessor is not None]
    if not firsts:
        return ""
    return text_of(parts_of(min(firsts, key=lambda c: c.seq).output))


def title_of(g: Graph) -> str:
    """The session meta `title` when set (`sessions name ID TITLE`), else the first user message."""
    try:
        return one_line(g.extra.get(TITLE_KEY) or first_user_text(g))
    except Exception:  # content that does not render as text: no title
        return ""


def build(session: Session, commit: bytes, commit_time: float, turn: int) -> bytes:
    g = session.graph
    info = session.info
    row = {"session_id": session.id, "title": title_of(g), "last_activity": commit_time,
           "created_at": info.get("created_at"), "working_dir": info.get("working_dir"),
           "identity": g.extra.get(IDENTITY_KEY), "commit": commit.decode(), "turn": turn,
           "nodes": len(g.nodes)}
    return orjson.dumps(row, option=orjson.OPT_SORT_KEYS)


def _text(v: object) -> str | None:
    return v[:_TEXT_MAX] if isinstance(v, str) else None


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def parse(data: bytes, session_id: str) -> RemoteSession | None:
    try:
        d = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(d, dict) or d.get("session_id") != session_id:
        return None
    ident = d.get("identity")
    if isinstance(ident, dict):
        ident = {k: t for k in ("kind", "remote", "path") if (t := _text(ident.get(k))) is not None}
    else:
        ident = None
    turn, nodes = _num(d.get("turn")), _num(d.get("nodes"))
    return {"session_id": session_id, "title": one_line(_text(d.get("title")) or ""),
            "last_activity": _num(d.get("last_activity")), "created_at": _num(d.get("created_at")),
            "working_dir": _text(d.get("working_dir")), "identity": ident, "commit": _text(d.get("commit")),
            "turn": int(turn) if turn is not None else None, "nodes": int(nodes) if nodes is not None else None}
