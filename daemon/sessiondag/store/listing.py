"""A row of the session listing (`SessionStore.list_sessions`, `session/list`), built from the
session's session.json, which is hostile until checked: read_info (session_load.py) checks the
fields a row carries, and a session whose session.json does not hold up is the row of an
unreadable session (`readable: false`, `error` saying why) with a logged warning, never a crash
of the whole listing or a field of the wrong type (rpc_schema/schemas/session_summary.json)."""

from __future__ import annotations

import logging
from ..core.errors import SessionDagError
from ..core.ids import check_session_id
from ..core.wire_types import SessionSummary

log = logging.getLogger(__name__)


SessionRow = SessionSummary   # rpc_schema/schemas/session_summary.json (core/wire_types.py, generated)


def readable_row(sid: str, info: dict[str, object], updated_at: float) -> SessionRow:
    """The row of a session whose session.json read_info took (so its fields have their types:
    the narrowing below only says so to the type checker)."""
    wd, created, version, title = (info.get("working_dir"), info.get("created_at"), info.get("schema_version"),
                                   info.get("title"))
    created_at = created if isinstance(created, (int, float)) else None
    return {"session_id": sid, "working_dir": wd if isinstance(wd, str) else None, "created_at": created_at,
            "updated_at": updated_at or created_at, "schema_version": version if isinstance(version, int) else None,
            "readable": True, "title": title if isinstance(title, str) else None}


def unreadable_row(sid: str, e: SessionDagError) -> SessionRow:
    log.warning("session %s is listed unreadable: %s", sid, e)
    return {"session_id": sid, "working_dir": None, "created_at": None, "updated_at": None,
            "schema_version": None, "readable": False, "title": None, "error": str(e)}


def is_session_name(name: str) -> bool:
    """Could `name` (an entry of sessions/) be a session at all? A name no session id can have (not
    [A-Za-z0-9._-], not UTF-8 on disk) is nobody's session: skipped with a warning, not listed."""
    try:
        check_session_id(name)
    except SessionDagError:
        log.warning("sessions/%r is not a session (its name is no session id): not listed", name)
        return False
    return True
