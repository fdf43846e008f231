"""Daemon errors as ACP errors: the JSON-RPC code and `data` (with sessiondag's `kind` and typed
fields, e.g. `reason: working_dir_mismatch`) pass through unchanged, so a client can tell a
working-dir mismatch from a corrupt or missing session.

One exception: whatever ACP calls a missing resource (a session that does not exist, was deleted,
or is not open on this connection; a node that is not there) answers ACP's -32002 "Resource not
found", and sessiondag's own code travels in `data.code` (-32014 not_found, -32018 session_resume
with reason missing, -32022 session_deleted)."""

from __future__ import annotations

from typing import TypeGuard

from acp import RequestError
from sessiondag_client.errors import ConnectionClosedError, RpcError

RESOURCE_NOT_FOUND = -32002
NOT_FOUND_CODE = -32014   # the daemon's not_found (sessiondag_client.wire.errors KINDS)


def _not_found(data: object) -> TypeGuard[dict[str, object]]:
    if not isinstance(data, dict):
        return False
    kind = data.get("kind")
    return kind in ("not_found", "session_deleted") or (kind == "session_resume" and data.get("reason") == "missing")


def _typed(code: int, message: str, data: object) -> RequestError:
    if _not_found(data):
        return RequestError(RESOURCE_NOT_FOUND, message, {**data, "code": code})
    return RequestError(code, message, data)


def to_acp(e: BaseException) -> RequestError:
    if isinstance(e, RequestError):
        return e
    code = getattr(e, "rpc_code", None)
    if code is not None:  # a typed store error re-raised by the client
        return _typed(code, str(e), getattr(e, "rpc_data", None))
    if isinstance(e, RpcError):
        return _typed(e.code, e.message, e.data)
    if isinstance(e, (ConnectionClosedError, OSError)):
        return RequestError(-32603, f"the sessiondag daemon is not reachable: {e}",
                            {"kind": "daemon_unavailable"})
    return RequestError(-32603, f"{type(e).__name__}: {e}", {"kind": "internal_error"})


def invalid(message: str, **data: object) -> RequestError:
    return RequestError(-32602, message, {"kind": "invalid_params", **data})


def unknown_session(session_id: str) -> RequestError:
    """The session is not open on this ACP connection: ACP's -32002, the daemon's not_found shape."""
    return RequestError(RESOURCE_NOT_FOUND, f"session {session_id!r} is not open on this connection "
                                            "(session/new, session/load or session/resume first)",
                        {"kind": "not_found", "what": "session", "id": session_id, "code": NOT_FOUND_CODE})
