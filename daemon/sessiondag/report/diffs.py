"""The workspace changes a report shows: a turn's files from its checkpoints (the snapshot before the
turn against the one at its end, docs/checkpoints.md), else the files its tool calls recorded
(`workspace_files`: before/after blobs of write_file / edit_file) as diffs of those blobs.
"""

from __future__ import annotations

import difflib

from ..core.errors import SessionDagError
from ..core.model import Call
from ..runtime import checkpoints
from ..store.session import Session
from .page_types import FileChange
from .redact import Redactor

BINARY_PROBE = 8000


def _text(data: bytes) -> str | None:
    if b"\0" in data[:BINARY_PROBE]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _unified(old: str, new: str, path: str, created: bool, deleted: bool) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        "/dev/null" if created else "a/" + path, "/dev/null" if deleted else "b/" + path))


def _clipped(d: FileChange, budget: list[int], per_file: int, red: Redactor) -> FileChange:
    """The diff of `d` masked, cut to `per_file` bytes, and left out once the turn's budget is spent."""
    text = d.pop("diff", None)
    if text is None:
        return d
    text = red.text(text)
    size = len(text.encode("utf-8"))
    if size > budget[0]:
        d["note"] = f"diff of {size} bytes left out (the report's diff budget is spent)"
        return d
    if size > per_file:
        text = text.encode("utf-8")[:per_file].decode("utf-8", "ignore")
        d["note"] = f"diff cut: {size - per_file} more bytes not included (the report's size limit)"
        size = per_file
    budget[0] -= size
    d["diff"] = text
    return d


def blob_diff(s: Session, f: dict[str, object], limit: int, per_file: int, red: Redactor) -> FileChange:
    path = red.text(str(f.get("path")))
    before, after = f.get("before_blob"), f.get("after_blob")
    d: FileChange = {"path": path, "change": "added" if before is None else "deleted" if after is None else "modified"}
    try:
        sides = [s.load_blob(x) if isinstance(x, str) else b"" for x in (before, after)]
    except (SessionDagError, OSError, KeyError, ValueError):
        d["note"] = "its contents are not in the session (over workspace.max_file_bytes, or pruned)"
        return d
    texts = [_text(x) for x in sides]
    if texts[0] is None or texts[1] is None:
        d["note"] = f"binary ({len(sides[0])} → {len(sides[1])} bytes)"
        return d
    d["diff"] = _unified(texts[0], texts[1], path, before is None, after is None)
    return _clipped(d, [limit], per_file, red)


def turn_diff(s: Session, user: Call, limit: int, per_file: int, red: Redactor) -> list[FileChange] | None:
    """The files turn `user` (a ROOT-level user node) changed, from its checkpoints; None when it has
    none to compare (no snapshot, checkpoints off): the caller falls back to the tool calls' records."""
    ck = user.metadata.get("checkpoint")
    if not isinstance(ck, dict) or not ck.get("id"):
        return None
    if ck.get("changed") == 0:
        return []
    try:
        res = checkpoints.diff(s, None, user.id)
    except (SessionDagError, OSError, KeyError, ValueError):
        return None
    budget = [limit]
    out = []
    for f in res.get("files", ()):
        d: FileChange = {"path": red.text(str(f.get("path"))), "change": f.get("change")}
        if f.get("too_big") or f.get("binary") or f.get("not_stored"):
            why = "too big" if f.get("too_big") else "binary" if f.get("binary") else "not stored (over the limit)"
            d["note"] = why
        elif f.get("diff") is not None:
            d["diff"] = f["diff"]
        out.append(_clipped(d, budget, per_file, red))
    return out
