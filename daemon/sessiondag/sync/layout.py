"""The ref layout one remote repository holds for many sessions:

    refs/sessiondag/<session-id>/main      the session's newest commit (its local refs/heads/main)
    refs/sessiondag/<session-id>/summary   a small JSON blob: what `sync list` shows without bodies

and, inside each local session's git/, what it last exchanged with a remote:

    refs/sessiondag-remotes/<remote-key>/main   the remote's main of this session at the last push/pull

A session id must also be a valid ref component (no `..`, no `.lock` ending: git's check-ref-format).
"""

from __future__ import annotations

import hashlib
import re

from dulwich.refs import Ref

from ..core.ids import check_session_id
from .errors import RemoteDataError, SyncError

PREFIX = b"refs/sessiondag/"
TRACKING = b"refs/sessiondag-remotes/"
_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_ref_id(session_id: str) -> str:
    sid = check_session_id(session_id)
    if ".." in sid or sid.endswith(".lock") or sid.endswith("."):
        raise SyncError(f"session id {sid!r} cannot be a git ref component (no '..', no '.lock' or '.' ending)",
                        session_id=sid)
    return sid


def main_ref(session_id: str) -> Ref:
    return Ref(PREFIX + check_ref_id(session_id).encode() + b"/main")


def summary_ref(session_id: str) -> Ref:
    return Ref(PREFIX + check_ref_id(session_id).encode() + b"/summary")


def sessions_of(refs: dict[bytes, bytes]) -> dict[str, dict[str, bytes]]:
    """session id -> {"main": sha, "summary": sha} of a remote's refs. Refs under our prefix that do
    not parse (hostile or foreign) are ignored, never trusted."""
    out: dict[str, dict[str, bytes]] = {}
    for name, sha in refs.items():
        if not name.startswith(PREFIX) or not re.fullmatch(rb"[0-9a-f]{40}", sha or b""):
            continue
        sid, _, leaf = name[len(PREFIX):].decode("utf-8", "replace").rpartition("/")
        if leaf not in ("main", "summary"):
            continue
        try:
            check_ref_id(sid)
        except (SyncError, ValueError):
            continue
        out.setdefault(sid, {})[leaf] = sha
    return out


def remote_key(name_or_url: str) -> str:
    """The tracking-ref component of a remote: its name, or a hash of an unnamed URL."""
    if _KEY.fullmatch(name_or_url):
        return name_or_url
    return "url-" + hashlib.sha1(name_or_url.encode()).hexdigest()[:16]


def tracking_ref(key: str) -> Ref:
    if not _KEY.fullmatch(key) and not key.startswith("url-"):
        raise RemoteDataError(f"bad remote key {key!r}")
    return Ref(TRACKING + key.encode() + b"/main")
