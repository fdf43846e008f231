"""A framework's conversation key (LangGraph thread_id, Agents SDK session_id) as one sessiondag session.

The key becomes the session id `<prefix><key>` when that is a valid id, else `<prefix>h-<sha256>`;
the key itself is kept in session meta `<meta_key>` so listing can map sessions back to keys.
Sessions are created without a working dir (they belong to no workspace) and opened with
`SessionStore.session`, which does not check one.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Callable, Iterator, Protocol

from .. import InvalidSessionIdError, SessionDagError, SessionExistsError, SessionResumeError, check_session_id
from ..context.store_factory import install_hooks, open_store
from ..core.settings import Settings
from ..store import Session, SessionStore


def as_store(store: SessionStore | str | os.PathLike[str] | None, settings: Settings | None = None, *,
             hooks: bool = True) -> SessionStore:
    """A SessionStore, a state directory, or None (the default state directory). A store built here
    keeps `settings` (default: the process's, resolved once now: nothing reads them again). With
    `hooks` (the default) it has the application's commit hooks (context/store_factory.py: the aging
    boundary's advance), a store handed in gets them too; an adapter that goes without says why."""
    if isinstance(store, SessionStore):
        return install_hooks(store) if hooks else store
    if hooks:
        return open_store(store, settings=settings)
    return SessionStore(store, settings=settings)


def session_id_for(prefix: str, key: str) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidSessionIdError(key, "a thread / session key must be a non-empty string")
    candidate = prefix + key
    if len(candidate) <= 120 and not key.startswith("h-"):
        try:
            return check_session_id(candidate)
        except InvalidSessionIdError:
            pass
    return check_session_id(prefix + "h-" + hashlib.sha256(key.encode()).hexdigest()[:40])


def find(store: SessionStore, prefix: str, key: str) -> Session | None:
    """The session of `key`, or None when it was never created (or was deleted)."""
    sid = session_id_for(prefix, key)
    if not store.exists(sid):
        return None
    try:
        return store.session(sid)
    except SessionResumeError as e:
        if e.reason == "missing":  # deleted by another process a moment ago
            return None
        raise


def open_or_create(store: SessionStore, prefix: str, key: str, meta_key: str) -> Session:
    """The session of `key`, created (with the key in its meta) when missing; safe against a
    concurrent creator in another process."""
    s = find(store, prefix, key)
    if s is None:
        sid = session_id_for(prefix, key)
        try:
            store.start_session(sid, working_dir=None)
        except SessionExistsError:
            pass
        s = store.session(sid)
    if s.graph.extra.get(meta_key) != key:
        with s.lock:
            if s.graph.extra.get(meta_key) != key:
                s.set_meta(meta_key, key)
    return s


def each(store: SessionStore, prefix: str, meta_key: str) -> Iterator[tuple[str, Session]]:
    """(key, session) for every session this adapter created in the store, by session id."""
    for info in store.list_sessions():
        sid = info["session_id"]
        if not sid.startswith(prefix) or not info.get("readable"):
            continue
        try:
            s = store.session(sid)
        except SessionResumeError:
            continue
        key = s.graph.extra.get(meta_key)
        if isinstance(key, str):
            yield key, s


class Committer(Protocol):
    """An adapter whose pending journal records `commit()` folds into git."""

    def commit(self) -> None: ...


def commit_at_exit(ref: Callable[[], Committer | None]) -> None:
    """atexit hook of an adapter (held weakly): commit what it left pending. The store may already
    be closed by its owner; then there is nothing this hook can do, and it says so on stderr."""
    me = ref()
    if me is None:
        return
    try:
        me.commit()
    except (SessionDagError, OSError, ValueError) as e:
        print(f"sessiondag: pending journal records not folded into git at exit: {e}", file=sys.stderr)
