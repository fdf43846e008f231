"""`sync list`: what a remote holds — one row per session from its summary blob; the refs and
those small blobs are all that is fetched (never a node)."""

from __future__ import annotations

from dulwich.objects import Blob, ObjectID

from . import layout, summary
from .fetch import fetch_blobs, fetch_named
from .remotes import Remote


def _summaries(refs: dict[bytes, bytes]) -> list[bytes]:
    return [e["summary"] for e in layout.sessions_of(refs).values() if "summary" in e]


def list_remote(remote: Remote, refs: dict[bytes, bytes] | None = None) -> list[summary.RemoteSession]:
    """Rows, newest first. Without `refs`, the refs and the summaries come in one connection."""
    if refs is None:
        refs, fetched = fetch_named(remote.url, _summaries, remote.bounds)
    else:
        fetched = fetch_blobs(remote.url, _summaries(refs), remote.bounds)
    store = fetched.object_store
    sessions = layout.sessions_of(refs)
    rows: list[summary.RemoteSession] = []
    for sid, entry in sorted(sessions.items()):
        row: summary.RemoteSession | None = None
        sha = entry.get("summary")
        if sha is not None and ObjectID(sha) in store:
            obj = store[ObjectID(sha)]
            if isinstance(obj, Blob):
                row = summary.parse(obj.data, sid)
        if row is None:
            row = {"session_id": sid, "title": "", "last_activity": None, "created_at": None, "working_dir": None,
                   "identity": None, "commit": None, "turn": None, "nodes": None}
        row["commit"] = entry["main"].decode() if "main" in entry else None   # the ref is the truth
        rows.append(row)
    rows.sort(key=lambda r: r["last_activity"] or 0, reverse=True)
    return rows
