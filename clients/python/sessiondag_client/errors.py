"""Server errors re-raised as the exception classes the store itself raises."""

from __future__ import annotations

from typing import Any

from sessiondag.core.errors import ERROR_CLASSES, SessionDagError
from sessiondag.core.paging import InvalidCursorError


class RpcError(Exception):
    """A JSON-RPC error that is not one of the store's typed errors (-32601, -32602, -32603, …)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.data = data


class InvalidParamsError(RpcError):
    pass


class MethodNotFoundError(RpcError):
    pass


class RequestCancelledError(RpcError):
    pass


class ConnectionClosedError(ConnectionError):
    pass


_ATTR_ALIASES = {"id": "ident"}
_MORE_CLASSES = {InvalidCursorError.code: InvalidCursorError}
_STANDARD = {-32602: InvalidParamsError, -32601: MethodNotFoundError, -32800: RequestCancelledError}


def from_error(err: dict[str, Any]) -> Exception:
    """The exception for a JSON-RPC error object."""
    code = err.get("code", -32603)
    message = str(err.get("message", ""))
    data = err.get("data")
    kind = data.get("kind") if isinstance(data, dict) else None
    cls = (ERROR_CLASSES.get(kind) or _MORE_CLASSES.get(kind)) if isinstance(kind, str) else None
    if cls is None:
        return _STANDARD.get(code, RpcError)(code, message, data)
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    for key, value in data.items():
        if key in ("kind", "should_clear_handle"):
            continue  # should_clear_handle is derived from reason on SessionResumeError
        try:
            setattr(exc, _ATTR_ALIASES.get(key, key), value)
        except AttributeError:
            pass
    exc.rpc_code = code
    exc.rpc_data = data
    return exc


__all__ = ["RpcError", "InvalidParamsError", "MethodNotFoundError", "RequestCancelledError",
           "ConnectionClosedError", "SessionDagError", "from_error"]
