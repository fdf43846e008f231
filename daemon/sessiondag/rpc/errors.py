"""The daemon's exceptions as JSON-RPC errors, and back: one table between its typed errors and the
wire error kinds (`sessiondag_client.wire.errors`, which holds the codes and the (de)serializer).

A typed error travels as `{code, message, data}` where `data.kind` is the error's `code` string
(e.g. "session_resume") and the rest of `data` is the error's own `data()`.
"""

from __future__ import annotations


from sessiondag_client.wire import errors as wire
from sessiondag_client.wire.errors import (APP_CODES, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST,  # noqa: F401
                                           METHOD_NOT_FOUND, PARSE_ERROR, REQUEST_CANCELLED,
                                           SERVER_NOT_INITIALIZED, RpcError)

from ..core.errors import ERROR_CLASSES, SessionDagError, storage_error_from
from ..sync.errors import SYNC_ERROR_CLASSES

# wire kind <-> the daemon's class: every typed error of core.errors (and of sync) has a wire kind (and so a code)
KIND_CLASSES: dict[str, type[SessionDagError]] = {"sessiondag_error": SessionDagError, **ERROR_CLASSES,
                                                  **SYNC_ERROR_CLASSES}
_unmapped = set(KIND_CLASSES) - set(wire.KINDS)
if _unmapped:  # pragma: no cover - caught at import by every test
    raise RuntimeError(f"typed errors without a wire kind: {sorted(_unmapped)}")


def error_object(exc: BaseException) -> dict[str, object]:
    """The JSON-RPC error object for an exception raised by a handler."""
    if isinstance(exc, RpcError):
        return exc.to_dict()
    if isinstance(exc, OSError) and exc.errno is not None:  # a filesystem fault no layer typed
        exc = storage_error_from(exc)
    if isinstance(exc, SessionDagError):
        kind = getattr(exc, "code", "sessiondag_error")
        if kind == "invalid_params":
            return wire.error_object(INVALID_PARAMS, str(exc), {"kind": "invalid_params", **_fields(exc)})
        if kind == "invalid_manifest":  # the manifest a client passed to session/render: a bad param
            return wire.error_object(INVALID_PARAMS, f"param 'manifest': {exc}",
                                     {"kind": "invalid_params", "param": "manifest"})
        return wire.typed_error_object(kind, str(exc), _fields(exc))
    return wire.error_object(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}"[:2000],
                             {"kind": "internal_error", "type": type(exc).__name__})


def _fields(exc: SessionDagError) -> dict[str, object]:
    try:
        return exc.data()
    except Exception:  # an error's own data() must never turn into an internal error
        return {}


def from_wire(exc: BaseException) -> BaseException:
    """The daemon's own exception for a typed error a client raised (`sessiondag_client` → core class,
    same message and fields), so code holding a client sees the errors an in-process call raises.
    Anything else is returned as it is."""
    if not isinstance(exc, wire.SessionDagError):
        return exc
    cls = KIND_CLASSES.get(exc.code)
    if cls is None:
        return exc
    out = cls.__new__(cls)
    Exception.__init__(out, *exc.args)
    for key, value in exc.rpc_data.items():
        if key in ("kind", "should_clear_handle"):  # should_clear_handle is derived from reason
            continue
        try:
            setattr(out, wire.ATTR_ALIASES.get(key, key), value)
        except AttributeError:
            pass
    return out
