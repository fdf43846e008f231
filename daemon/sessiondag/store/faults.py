"""Filesystem faults on the write path: typed errors, and the housekeeping that may fail safely.

Every public write of a `Session` runs under `storage_guard`: an OSError (no space, quota,
read-only filesystem, I/O error, out of descriptors) leaves as `StorageFullError` (ENOSPC, EDQUOT)
or `StorageError` (anything else) with its errno. The write paths below the guard are built so
that such a failure changes nothing a reader can see: a journal write that fails is zeroed again
(journal.py), a turn commit changes nothing in memory before its pack is durable and the ref names
it (gitstore.py, session.py). See docs/storage.md "Faults".
"""

from __future__ import annotations

import functools
import logging
import uuid
from typing import Callable, ParamSpec, Protocol, TypeVar

from ..core.errors import storage_error_from
from .gitstore import GitSnapshots
from .journal import Journal

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def storage_guard(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn an OSError escaping a store write into the typed storage error."""

    @functools.wraps(fn)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except OSError as e:
            raise storage_error_from(e, fn.__name__.strip("_").replace("_", " ")) from e

    return guarded


class Rotating(Protocol):
    """What a rotation uses of its Session (naming store/session.py's class: an import cycle)."""

    @property
    def id(self) -> str: ...

    @property
    def journal(self) -> Journal: ...

    @property
    def git(self) -> GitSnapshots: ...


def rotate_journal(session: Rotating, schema_version: int) -> None:
    """After a commit: install a fresh journal. The commit already covers every record of the old
    one, so a failure here (no space for the new file …) loses nothing: the old journal stays, is
    still correct, and the next commit tries again."""
    journal = session.journal
    try:
        session.git.sync()  # the snapshots must survive power loss before the log goes
        journal.create(uuid.uuid4().hex, session.id, schema_version)
    except OSError as e:  # Journal.create removed its temp file and left the old journal in place
        log.warning("journal rotation of session %s failed (retried after the next commit): %s", session.id, e)
        return
    journal.read_new()
