"""The diff of one file-writing tool call, from the blobs it recorded (runtime/file_records.py):
`metadata.workspace_files: [{path, before_blob, after_blob}]` of a write_file / edit_file node.

`tool_diff(s, node_id)` -> {node_id, files: [{path, old_text, new_text}]} (old_text null: the file
did not exist; new_text null: it was gone after the call), a file that is binary, over 1 MiB or not
stored (over the size limit) reported as `{path, binary | too_big | not_stored: true}` without texts.
A node that recorded no blobs (nothing changed on disk: a write through the client's file system)
has `files: []`. The metadata is read back from the session, so it is checked like any input."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..core.checkpoint import FILES_KEY
from .checkpoints import BINARY_PROBE, MAX_DIFF_BYTES

if TYPE_CHECKING:
    from ..store.session import Session

BLOB_ID = re.compile(r"[0-9a-f]{40}")


def _side(s: Session, blob: object) -> bytes | None | str:
    """A blob's bytes, None for an absent side, or why there are no texts."""
    if blob is None:
        return None
    if not isinstance(blob, str) or not BLOB_ID.fullmatch(blob):
        return "not_stored"
    try:
        return s.git.get_blob(blob)
    except KeyError:
        return "not_stored"


def _file(s: Session, entry: object) -> dict[str, object] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        return None
    out: dict[str, object] = {"path": entry["path"]}
    sides = [_side(s, entry.get("before_blob")), _side(s, entry.get("after_blob"))]
    if "not_stored" in sides:
        return {**out, "not_stored": True}
    data = [x for x in sides if isinstance(x, bytes)]
    if any(len(x) > MAX_DIFF_BYTES for x in data):
        return {**out, "too_big": True}
    if any(b"\0" in x[:BINARY_PROBE] for x in data):
        return {**out, "binary": True}
    try:
        old, new = (x.decode("utf-8") if isinstance(x, bytes) else None for x in sides)
    except UnicodeDecodeError:
        return {**out, "binary": True}
    return {**out, "old_text": old, "new_text": new}


def tool_diff(s: Session, node_id: str) -> dict[str, object]:
    node = s.get_node(node_id)
    entries = node.metadata.get(FILES_KEY) if isinstance(node.metadata, dict) else None
    files = [f for f in (_file(s, e) for e in (entries if isinstance(entries, list) else ())) if f is not None]
    return {"node_id": node_id, "files": files}
