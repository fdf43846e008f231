"""The files as they were just before a node ran (`session/restore {before: true}`, docs/checkpoints.md
"Just before a tool call").

A turn's snapshot is taken at its end; inside the turn only the file-writing tools record what they
changed (`metadata.workspace_files`: the blob before and after the call, runtime/file_records.py).
The files just before node N of a turn are therefore: the snapshot the turn started from (the end of
the turn before it, or the snapshot before the first turn), with the after-blob of every recorded
write of the turn's earlier tool calls laid on top, in order, and N's own before-blobs last (read
right before N ran: they also hold what someone else changed in those files meanwhile). What the
turn's other tool calls before N did to the files (`run_command`, an MCP tool) is not known: they
are listed in `unknown` and their effects are whatever the turn's starting snapshot says. A node
inside a sub-agent counts as its top-level tool call (the one that started the sub-agent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from ..core.checkpoint import FILES_KEY, MODE_FILE, Entry
from ..core.errors import InvalidNodeError, PathRefusedError
from ..core.model import ROOT
from ..store import checkpoints
from ..workspace.names import split

if TYPE_CHECKING:
    from ..core.graph import Graph
    from ..core.model import Call
    from ..store.session import Session

class BuiltFrom(TypedDict):
    """What the files just before a node were built from (files_before)."""

    start: str              # the checkpoint of the turn before (or the one before the first turn)
    applied: list[str]      # the earlier tool calls whose recorded writes were laid on top
    unknown: list[str]      # the earlier tool calls whose effect on the files is not known
    partial: object         # the start snapshot's own `partial` (its walk ran out of time)


READ_ONLY_TOOLS = frozenset({"read_file", "list_dir", "search_text", "ask_user"})


def _top(g: Graph, node_id: str, user_id: str) -> Call:
    """The node of the turn's top-level chain that `node_id` is (or runs under)."""
    c = g.get(node_id)
    seen = 0
    while c.id != user_id and seen < 1_000_000:
        caller = g.nodes.get(c.caller) if c.caller not in (None, ROOT) else None
        if caller is None or caller.id == user_id or (caller.role == "llm" and caller.caller == user_id):
            return c
        c = caller
        seen += 1
    return c


def _path(p: object) -> bytes | None:
    try:
        return b"/".join(split(p)) if isinstance(p, str) else None
    except PathRefusedError:
        return None


def files_before(s: Session, node_id: str) -> tuple[dict[bytes, Entry], BuiltFrom]:
    """(path -> entry, what it was built from: {start, applied, unknown, partial}) for the files
    just before `node_id` ran."""
    g = s.graph
    if node_id == ROOT or node_id not in g.nodes:
        raise InvalidNodeError(f"before: {node_id!r} is not a node of the session")
    user = checkpoints.turn_user(g, node_id)
    start = checkpoints.resolve(s, checkpoints.previous_turn(s, node_id))
    entries, info = checkpoints.read(s.git, start)
    entries = dict(entries)
    out: BuiltFrom = {"start": start, "applied": [], "unknown": [], "partial": info.get("partial")}
    if not (user.role == "user" and user.caller == ROOT):
        return entries, out          # before any turn: the snapshot before the first one
    top = _top(g, node_id, user.id)
    chain = []
    c = top
    while c.id != user.id and c.predecessor not in (None, ROOT):
        c = g.get(c.predecessor)
        chain.append(c)
    for c in reversed(chain):
        if c.role != "code":
            continue
        recs = (c.metadata or {}).get(FILES_KEY)
        if recs:
            for r in recs:
                p = _path(r.get("path"))
                if p is None or r.get("after_blob") is None:
                    out["unknown"].append(c.id)
                    continue
                old = entries.get(p)
                entries[p] = Entry(old.mode if old is not None and old.stored else MODE_FILE, r["after_blob"], -1)
            out["applied"].append(c.id)
        elif c.name not in READ_ONLY_TOOLS:
            out["unknown"].append(c.id)
    own = (top.metadata or {}).get(FILES_KEY) if top.role == "code" else None
    for r in own or ():
        p = _path(r.get("path"))
        if p is None:
            continue
        if r.get("before_blob") is not None:
            old = entries.get(p)
            entries[p] = Entry(old.mode if old is not None and old.stored else MODE_FILE, r["before_blob"], -1)
        elif p in entries and entries[p].stored:
            del entries[p]           # it did not exist yet (an over-limit file stays as recorded)
    out["unknown"] = list(dict.fromkeys(out["unknown"]))
    return entries, out
