"""Daemon errors as ACP errors: the JSON-RPC code and `data` (with sessiondag's `kind` and typed
fields, e.g. `reason: working_dir_mismatch`) pass through unchanged, so a client can tell a
working-dir mismatch from a corrupt or missing session."""

from __future__ import annotations

from typing import Any

from acp import RequestError
from sessiondag_client.errors import ConnectionClosedError, RpcError


def to_acp(e: BaseException) -> RequestError:
    if isinstance(e, RequestError):
        return e
    code = getattr(e, "rpc_code", None)
    if code is not None:  # a typed store error re-raised by the client
        return RequestError(code, str(e), getattr(e, "rpc_data", None))
    if isinstance(e, RpcError):
        return RequestError(e.code, e.message, e.data)
    if isinstance(e, (ConnectionClosedError, OSError)):
        return RequestError(-32603, f"the sessiondag daemon is not reachable: {e}",
                            {"kind": "daemon_unavailable"})
    return RequestError(-32603, f"{type(e).__name__}: {e}", {"kind": "internal_error"})


def invalid(message: str, **data: Any) -> RequestError:
    return RequestError(-32602, message, {"kind": "invalid_params", **data})


def unknown_session(session_id: str) -> RequestError:
    """The shape of the daemon's not_found error, for sessions this ACP connection never opened."""
    return RequestError(-32014, f"session {session_id!r} is not open on this connection "
                                "(session/new, session/load or session/resume first)",
                        {"kind": "not_found", "what": "session", "id": session_id})
