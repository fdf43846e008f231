"""Identifiers: node ids, session ids (minted, checked, derived)."""

from __future__ import annotations

import os
import re

from .errors import InvalidSessionIdError

_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")


def mint_node_id() -> str:
    """A stable random node id, independent of any git hash (96 bits, hex)."""
    return os.urandom(12).hex()


def mint_session_id() -> str:
    return "s-" + os.urandom(8).hex()


def check_session_id(session_id: object) -> str:
    """Return `session_id` if it is safe to use as a directory name, else raise InvalidSessionIdError.

    Allowed: 1-128 characters of [A-Za-z0-9._-], no leading dot (which also rules out '.' and '..').
    """
    if not isinstance(session_id, str):
        raise InvalidSessionIdError(session_id, "not a string")
    if not _SESSION_ID.fullmatch(session_id):
        raise InvalidSessionIdError(session_id, "use 1-128 characters of [A-Za-z0-9._-]")
    if session_id.startswith("."):
        raise InvalidSessionIdError(session_id, "must not start with '.'")
    return session_id


def derive_session_id(scope: str, role: str) -> str:
    """The id of the resumable thread for `role` under `scope`: '{scope}-{role}', checked now."""
    check_session_id(scope)
    check_session_id(role)
    return check_session_id(f"{scope}-{role}")
