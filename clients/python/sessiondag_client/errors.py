"""The client's exceptions: server errors re-raised by kind (see `wire.errors`)."""

from .wire.errors import *  # noqa: F401,F403
from .wire.errors import (ERROR_CLASSES, ConnectionClosedError, InvalidParamsError, MethodNotFoundError,
                          RequestCancelledError, RpcError, SessionDagError, from_error)

__all__ = ["RpcError", "InvalidParamsError", "MethodNotFoundError", "RequestCancelledError",
           "ConnectionClosedError", "SessionDagError", "ERROR_CLASSES", "from_error"]
