"""JSON-RPC errors on the wire: the standard codes, one stable code per typed error kind, and the one
(de)serializer between error objects `{code, message, data}` and exceptions.

A typed error travels with `data.kind` (e.g. "session_resume") and the error's own fields in `data`
(rpc_schema/openrpc.json `components/errors`, the one registry: the codes and `KINDS` here are
generated from it into error_table.py). `from_error` turns an error object into the exception
of its kind here (`SessionResumeError` with `.reason`, `.session_id` …), every other error into
`RpcError` (or `InvalidParamsError`, `MethodNotFoundError`, `RequestCancelledError` by code). The
daemon maps its own exception classes to these kinds in one table (sessiondag/rpc/errors.py).
"""

from __future__ import annotations

from typing import Mapping

# the codes and the kinds: generated from rpc_schema/ (clients/python/scripts/gen_wire.py), the one registry
from .error_table import INTERNAL_ERROR as INTERNAL_ERROR
from .error_table import INVALID_PARAMS as INVALID_PARAMS
from .error_table import INVALID_REQUEST as INVALID_REQUEST
from .error_table import KINDS as KINDS
from .error_table import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from .error_table import PARSE_ERROR as PARSE_ERROR
from .error_table import REQUEST_CANCELLED as REQUEST_CANCELLED
from .error_table import SERVER_NOT_INITIALIZED as SERVER_NOT_INITIALIZED
from .error_table import UNCODED_KINDS as UNCODED_KINDS

APP_CODES: dict[str, int] = {kind: code for kind, (code, _, _) in KINDS.items()}
ATTR_ALIASES = {"id": "ident"}  # data keys that are attributes under another name (`NotFoundError.ident`)


class RpcError(Exception):
    """A JSON-RPC error that is not one of the typed kinds (-32601, -32602, -32603, …)."""

    def __init__(self, code: int, message: str, data: object = None):
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, object]:
        return error_object(self.code, self.message, self.data)


class InvalidParamsError(RpcError):
    pass


class MethodNotFoundError(RpcError):
    pass


class RequestCancelledError(RpcError):
    pass


class ConnectionClosedError(ConnectionError):
    pass


class SessionDagError(Exception):
    """A typed error of the daemon: `code` is its kind (data.kind), `rpc_code` the JSON-RPC code,
    `rpc_data` the error's data; each data field is an attribute too (`id` as `ident`)."""

    code = "sessiondag_error"
    rpc_code = APP_CODES["sessiondag_error"]
    rpc_data: dict[str, object] = {}


ERROR_CLASSES: dict[str, type[SessionDagError]] = {"sessiondag_error": SessionDagError}
for _kind, (_code, _name, _parent) in KINDS.items():
    if _parent is not None:
        ERROR_CLASSES[_kind] = type(_name, (ERROR_CLASSES[_parent],),
                                    {"code": _kind, "rpc_code": _code, "__module__": __name__})
_STANDARD = {INVALID_PARAMS: InvalidParamsError, METHOD_NOT_FOUND: MethodNotFoundError,
             REQUEST_CANCELLED: RequestCancelledError}


def error_object(code: int, message: str, data: object = None) -> dict[str, object]:
    """The JSON-RPC error object."""
    d: dict[str, object] = {"code": code, "message": message}
    if data is not None:
        d["data"] = data
    return d


def typed_error_object(kind: str, message: str, fields: Mapping[str, object]) -> dict[str, object]:
    """The error object of a typed kind (an unknown kind travels as sessiondag_error's code)."""
    code = APP_CODES.get(kind, APP_CODES["sessiondag_error"])
    return {"code": code, "message": message, "data": {"kind": kind, **fields}}


def from_error(err: object) -> Exception:
    """The exception for a JSON-RPC error object."""
    if not isinstance(err, dict):
        return RpcError(INTERNAL_ERROR, "malformed error object")
    code = err.get("code", INTERNAL_ERROR)
    message = str(err.get("message", ""))
    data = err.get("data")
    kind = data.get("kind") if isinstance(data, dict) else None
    cls = ERROR_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None or not isinstance(data, dict):
        return _STANDARD.get(code, RpcError)(code, message, data)
    exc = cls(message)
    for key, value in data.items():
        if key != "kind":
            setattr(exc, ATTR_ALIASES[key] if key in ATTR_ALIASES else str(key), value)
    exc.rpc_code = code
    exc.rpc_data = data
    return exc


InvalidNodeError = ERROR_CLASSES["invalid_node"]
PredecessorMissingError = ERROR_CLASSES["predecessor_missing"]
BrokenPredecessorChainError = ERROR_CLASSES["broken_predecessor_chain"]
NotFoundError = ERROR_CLASSES["not_found"]
HeadMismatchError = ERROR_CLASSES["head_mismatch"]
InvalidSessionIdError = ERROR_CLASSES["invalid_session_id"]
SessionExistsError = ERROR_CLASSES["session_exists"]
SessionResumeError = ERROR_CLASSES["session_resume"]
WorkingDirUnboundError = ERROR_CLASSES["working_dir_unbound"]
CorruptError = ERROR_CLASSES["corrupt"]
RenderError = ERROR_CLASSES["render_error"]
SessionDeletedError = ERROR_CLASSES["session_deleted"]
SessionBusyError = ERROR_CLASSES["session_busy"]
StorageError = ERROR_CLASSES["storage_error"]
StorageFullError = ERROR_CLASSES["storage_full"]
ConfigError = ERROR_CLASSES["config_error"]
InvalidCursorError = ERROR_CLASSES["invalid_cursor"]
SyncError = ERROR_CLASSES["sync_error"]
SyncConflictError = ERROR_CLASSES["sync_conflict"]
NonFastForwardError = ERROR_CLASSES["sync_non_fast_forward"]
SecretInSessionError = ERROR_CLASSES["secret_in_session"]
ReplayRefusedError = ERROR_CLASSES["replay_refused"]
WorkspaceDirtyError = ERROR_CLASSES["workspace_dirty"]
TurnRunningError = ERROR_CLASSES["turn_running"]
NoCheckpointError = ERROR_CLASSES["no_checkpoint"]
