"""JSON-RPC error codes: the standard ones and a stable number per typed store error.

A typed error travels as `{code, message, data}` where `data.kind` is the error's `code` string from
`core.errors` (e.g. "session_resume") and the rest of `data` is the error's own `data()`. Clients map
`data.kind` back to the exception class (see clients/python/sessiondag_client/errors.py).
"""

from __future__ import annotations

from typing import Any

from ..core.errors import SessionDagError, storage_error_from

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_CANCELLED = -32800

# Stable application codes (implementation-defined server-error range). Never renumber.
APP_CODES: dict[str, int] = {
    "sessiondag_error": -32010,
    "invalid_node": -32011,
    "predecessor_missing": -32012,
    "broken_predecessor_chain": -32013,
    "not_found": -32014,
    "head_mismatch": -32015,
    "invalid_session_id": -32016,
    "session_exists": -32017,
    "session_resume": -32018,
    "working_dir_unbound": -32019,
    "corrupt": -32020,
    "render_error": -32021,
    "storage_error": -32030,
    "storage_full": -32031,
    "config_error": -32032,
    "session_deleted": -32022,
    "session_busy": -32023,
    "invalid_cursor": -32040,
}


class RpcError(Exception):
    """An error to send as-is (code, message, data)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            d["data"] = self.data
        return d


def error_object(exc: BaseException) -> dict[str, Any]:
    """The JSON-RPC error object for an exception raised by a handler."""
    if isinstance(exc, RpcError):
        return exc.to_dict()
    if isinstance(exc, OSError) and exc.errno is not None:  # a filesystem fault no layer typed
        exc = storage_error_from(exc)
    if isinstance(exc, SessionDagError):
        kind = getattr(exc, "code", "sessiondag_error")
        if kind == "invalid_params":
            return {"code": INVALID_PARAMS, "message": str(exc), "data": {"kind": "invalid_params"}}
        try:
            extra = exc.data()
        except Exception:  # an error's own data() must never turn into an internal error
            extra = {}
        code = APP_CODES.get(kind, APP_CODES["sessiondag_error"])
        return {"code": code, "message": str(exc), "data": {"kind": kind, **extra}}
    return {"code": INTERNAL_ERROR, "message": f"internal error: {type(exc).__name__}: {exc}"[:2000],
            "data": {"kind": "internal_error", "type": type(exc).__name__}}
