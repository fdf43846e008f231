"""A session's title where listings read it: session.json `title` (session/list, so the VS Code tree
and the Neovim picker show what `sessions list` shows), set at a turn when missing — from the title
`sessions name` set in the session meta, else the first message — and rewritten by `sessions name`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store.session import Session

TITLE_CHARS = 80
TITLE_META = "title"  # the session meta `sessions name` sets (cli/catalog.py TITLE_KEY)


def title_of(content: object) -> str:
    """The title a first message gives a session: its text on one line, cut at TITLE_CHARS."""
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    text = " ".join(str(content or "").split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def record_title_first(session: Session, content: object) -> None:
    """At a turn: a session without a title in session.json gets one (listings read it without
    loading the session; `sessions name` replaces it): the title set in its meta, else its first
    message (`content` when this turn is the first). The caller holds the lock."""
    if session.info.get("title"):
        return
    g = session.graph
    named = g.extra.get(TITLE_META)
    if isinstance(named, str) and named.strip():
        title = title_of(named)
    else:
        firsts = [c for c in g.nodes.values() if c.role == "user" and c.caller == "ROOT" and c.predecessor is not None]
        title = title_of(min(firsts, key=lambda c: c.seq).output if firsts else content)
    if title:
        session.update_info(title=title)
