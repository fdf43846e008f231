"""Loading one stored session from its directory, every failure typed.

`read_info` checks the directory (no symlinks in its tree: layout.py), rebuilds a bare git clone or
backup (rebuild.py) and reads session.json; `load_session` builds the `Session` and folds its
snapshot and journal. What went wrong decides the error a caller sees:
- damage (a missing or unreadable file, a bad record) → `SessionResumeError(reason="corrupt")`,
  which tells clients to drop their handle;
- an exhausted or refusing environment (no fds, memory or space; read-only; forbidden) or any other
  I/O error → a typed `StorageError` (errno kept): the session is healthy, the handle is kept.
The caller (handles.py `SessionStore`) owns the cache, the open mark and the locking around it.
"""

from __future__ import annotations

import errno
import os
from typing import Any, Callable

import orjson

from ..core.errors import InvalidNodeError, SessionDagError, SessionResumeError, storage_error_from
from ..core.settings import Settings
from .checkpoints import SnapshotSource
from .layout import check_tree, read_small_file
from .rebuild import needs_rebuild, rebuild
from .session import SCHEMA_VERSION, CommitHook, Session

# an OSError with one of these while loading means something stored is missing: corrupt
_DAMAGE_ERRNOS = (errno.ENOENT, errno.ENOTDIR, errno.EISDIR, None)

_ENVIRONMENT = (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC, errno.EDQUOT, errno.EROFS,
                errno.EACCES, errno.EPERM)


def _raise_if_environment(e: BaseException) -> None:
    """Running out of fds, memory or space, or a read-only or forbidden file while loading is not
    damage: raise it as a typed storage error (errno kept) instead of calling a healthy session
    `corrupt` (which tells clients to drop their handle)."""
    cur: BaseException | None = e
    seen = 0
    while cur is not None and seen < 8:
        if isinstance(cur, OSError) and cur.errno in _ENVIRONMENT:
            raise storage_error_from(cur, "open") from None
        cur, seen = cur.__cause__ or cur.__context__, seen + 1


def read_info(path: str, sid: str, check: bool = True) -> dict[str, Any]:
    """session.json of the session `sid` at `path`; `check`: its whole tree first (layout.py: no symlinks)."""
    if not os.path.isdir(path):
        raise SessionResumeError(sid, "missing")
    if check:
        check_tree(path, sid)
    elif os.path.islink(path):
        raise SessionResumeError(sid, "corrupt", "the session directory is a symlink")
    if needs_rebuild(path):  # a git clone or a backup of the repository alone
        try:
            rebuild(path, sid, SCHEMA_VERSION)
        except OSError as e:
            raise storage_error_from(e, "rebuild") from None
    try:
        info = orjson.loads(read_small_file(os.path.join(path, "session.json")))
    except FileNotFoundError:
        raise SessionResumeError(sid, "corrupt", "session.json is missing") from None
    except (OSError, orjson.JSONDecodeError) as e:
        raise SessionResumeError(sid, "corrupt", f"session.json unreadable: {e}") from None
    if not isinstance(info, dict):
        raise SessionResumeError(sid, "corrupt", "session.json is not an object")
    version = info.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:   # `true == 1`: a bool is no version
        raise SessionResumeError(sid, "schema_mismatch", f"stored schema {version!r}, this build reads {SCHEMA_VERSION}")
    if info.get("session_id") != sid:
        raise SessionResumeError(sid, "corrupt", "session.json names another session")
    working_dir, created_at = info.get("working_dir"), info.get("created_at")
    if working_dir is not None and not isinstance(working_dir, str):
        raise SessionResumeError(sid, "corrupt", "session.json: working_dir is not a string")
    if created_at is not None and type(created_at) not in (int, float):
        raise SessionResumeError(sid, "corrupt", "session.json: created_at is not a number")
    return info


def load_session(path: str, sid: str, commit_hooks: list[CommitHook], settings: Callable[[], Settings],
                 snapshots: SnapshotSource | None) -> Session:
    """The session at `path`, loaded (its journal lock held meanwhile); on failure nothing stays open."""
    s = Session(path, sid, read_info(path, sid), commit_hooks, settings)
    s.snapshots = snapshots
    try:
        with s.journal.locked():
            s.catch_up.load()
    except SessionDagError as e:
        s.close()
        _raise_if_environment(e)
        if isinstance(e, SessionResumeError):
            raise
        raise SessionResumeError(sid, "corrupt", str(e)) from None
    except (OSError, KeyError, IndexError, TypeError, ValueError, AttributeError, InvalidNodeError) as e:
        s.close()
        _raise_if_environment(e)
        if isinstance(e, OSError) and e.errno not in _DAMAGE_ERRNOS:  # an I/O error, not damage
            raise storage_error_from(e, "open") from None  # keep the handle
        raise SessionResumeError(sid, "corrupt", f"{type(e).__name__}: {e}") from None
    except BaseException:
        s.close()
        raise
    return s
