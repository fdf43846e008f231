"""`sync list`: what a remote holds — one row per session from its summary blob; the refs and
those small blobs are all that is fetched (never a node)."""

from __future__ import annotations

from typing import Any

from . import layout, summary, transport
from .fetch import fetch_blobs
from .remotes import Remote


def list_remote(remote: Remote, refs: dict[bytes, bytes] | None = None) -> list[dict[str, Any]]:
    refs = transport.remote_refs(remote.url, remote.bounds) if refs is None else refs
    sessions = layout.sessions_of(refs)
    wanted = [e["summary"] for e in sessions.values() if "summary" in e]
    store = fetch_blobs(remote.url, wanted, remote.bounds).object_store
    rows = []
    for sid, entry in sorted(sessions.items()):
        row = None
        sha = entry.get("summary")
        if sha is not None and sha in store:
            obj = store[sha]
            if obj.type_name == b"blob":
                row = summary.parse(obj.data, sid)
        if row is None:
            row = {"session_id": sid, "title": "", "last_activity": None, "created_at": None, "working_dir": None,
                   "identity": None, "commit": None, "turn": None, "nodes": None}
        row["commit"] = entry["main"].decode() if "main" in entry else None   # the ref is the truth
        rows.append(row)
    rows.sort(key=lambda r: r["last_activity"] or 0, reverse=True)
    return rows
