"""A session directory that holds a complete git repository but lacks `session.json` and/or the
journal — a `git clone --bare` of a session's `git/` placed as a session, a restore from a backup
that kept only the repository — is rebuilt from its newest commit and opens normally.

What the newest commit's `meta.json` records (schema version, working dir, creation time) becomes
`session.json` (under the directory's own id); a missing journal becomes a fresh one (header only:
the snapshot already holds every committed node; records that were never committed are gone with
the journal that held them). A bare repository placed directly as the session directory (its
`HEAD`, `objects/`, `refs/` at the top) is first moved into `git/`. Anything else — no commit, an
unreadable commit or meta.json — is left as it is and reported `corrupt` by the caller.
"""

from __future__ import annotations

import logging
import os
import uuid

import orjson

from .gitstore import GitSnapshots
from .durable_files import fsync_dir, write_file_atomic
from .journal import Journal

log = logging.getLogger(__name__)

_BARE_ENTRIES = ("HEAD", "objects", "refs", "config", "packed-refs", "description", "info", "hooks",
                 "branches", "logs", "FETCH_HEAD", "ORIG_HEAD", "shallow")


def needs_rebuild(path: str) -> bool:
    return not (os.path.exists(os.path.join(path, "session.json"))
                and os.path.exists(os.path.join(path, "journal.log")))


def _newest_meta(git_dir: str) -> dict[str, object] | None:
    if not os.path.isdir(git_dir):
        return None
    git = GitSnapshots(git_dir)
    try:
        head = git.head()
        if head is None:
            return None
        meta, _ = git.load_meta(head)
        return meta
    except Exception as e:  # unreadable: not ours to repair; the caller reports corrupt
        log.warning("cannot rebuild from %s: %s", git_dir, e)
        return None
    finally:
        git.close()


def _is_flat_bare_repo(path: str) -> bool:
    return not os.path.exists(os.path.join(path, "git")) and os.path.isfile(os.path.join(path, "HEAD")) \
        and os.path.isdir(os.path.join(path, "objects"))


def _adopt_flat_bare_repo(path: str) -> None:
    """A bare clone placed as the session directory itself: move it into `git/`."""
    tmp = os.path.join(path, f".git-{uuid.uuid4().hex}")
    os.mkdir(tmp, 0o700)
    for name in _BARE_ENTRIES:
        src = os.path.join(path, name)
        if os.path.lexists(src):
            os.rename(src, os.path.join(tmp, name))
    os.rename(tmp, os.path.join(path, "git"))
    fsync_dir(path)


def rebuild(path: str, session_id: str, schema_version: int) -> bool:
    """Rebuild a missing session.json / journal from the newest commit. True if the session
    directory is complete afterwards. Runs under the session lock (racing openers rebuild once)."""
    if not os.path.isdir(path) or not needs_rebuild(path):
        return False
    flat = _is_flat_bare_repo(path)
    meta = _newest_meta(path if flat else os.path.join(path, "git"))
    if meta is None or meta.get("schema_version") != schema_version:
        return False  # nothing written: the caller reports what is missing as corrupt
    if flat:
        _adopt_flat_bare_repo(path)
    journal = Journal(os.path.join(path, "journal.log"), os.path.join(path, "lock"))
    try:
        with journal:
            if not os.path.exists(os.path.join(path, "journal.log")):
                journal.create(uuid.uuid4().hex, session_id, schema_version)
            info_path = os.path.join(path, "session.json")
            if not os.path.exists(info_path):
                info = {"session_id": session_id, "schema_version": schema_version,
                        "working_dir": meta.get("working_dir"), "created_at": meta.get("created_at")}
                write_file_atomic(info_path, orjson.dumps(info, option=orjson.OPT_INDENT_2))
    finally:
        journal.close()
    log.info("session %s rebuilt from its newest commit", session_id)
    return True
