"""Python client for the sessiondag daemon: `connect()` (async) and `SyncClient` (blocking).

It speaks the wire protocol only (`sessiondag_client.wire`) and imports nothing from the daemon package.
The names below load on first use (PEP 562): the daemon imports `sessiondag_client.wire` (its
codec and errors) and `discovery`, and a private `sessiondag serve --stdio` child must not pay for
the client's connection stack (anyio streams, the generated protocol) before it answers."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import AsyncClient
    from .connecting import connect, connect_tcp, connect_unix, spawn_stdio
    from .deadlines import DaemonNotResponding
    from .discovery import DaemonNotRunningError, DaemonStartError, find_daemon, start_daemon
    from .errors import (ConnectionClosedError, InvalidParamsError, MethodNotFoundError, RequestCancelledError,
                         RpcError, SessionDagError)
    from .sync import SyncClient
    from .wire.errors import (BrokenPredecessorChainError, ConfigError, HeadMismatchError, InvalidCursorError,
                              InvalidNodeError, InvalidSessionIdError, NotFoundError, PredecessorMissingError,
                              ReplayRefusedError, SessionBusyError, SessionDeletedError, SessionExistsError,
                              SessionResumeError, NoCheckpointError, StorageError, StorageFullError,
                              TurnRunningError, WorkingDirUnboundError, WorkspaceDirtyError)
    from .wire.types import Branch, BranchPage, Call, SessionHandle, Usage

_FROM = {  # public name -> the module defining it
    "AsyncClient": ".client", "SyncClient": ".sync", "DaemonNotResponding": ".deadlines",
    **dict.fromkeys(("connect", "connect_tcp", "connect_unix", "spawn_stdio"), ".connecting"),
    **dict.fromkeys(("DaemonNotRunningError", "DaemonStartError", "find_daemon", "start_daemon"), ".discovery"),
    **dict.fromkeys(("ConnectionClosedError", "InvalidParamsError", "MethodNotFoundError", "RequestCancelledError",
                     "RpcError", "SessionDagError"), ".errors"),
    **dict.fromkeys(("BrokenPredecessorChainError", "ConfigError", "HeadMismatchError", "InvalidCursorError",
                     "InvalidNodeError", "InvalidSessionIdError", "NotFoundError", "PredecessorMissingError",
                     "ReplayRefusedError", "SessionBusyError", "SessionDeletedError", "SessionExistsError",
                     "SessionResumeError", "NoCheckpointError", "StorageError", "StorageFullError",
                     "TurnRunningError", "WorkingDirUnboundError", "WorkspaceDirtyError"), ".wire.errors"),
    **dict.fromkeys(("Branch", "BranchPage", "Call", "SessionHandle", "Usage"), ".wire.types"),
}

__all__ = ["AsyncClient", "connect", "connect_tcp", "connect_unix", "spawn_stdio", "SyncClient", "RpcError",
           "InvalidParamsError", "MethodNotFoundError", "RequestCancelledError", "ConnectionClosedError",
           "DaemonNotRunningError", "DaemonNotResponding", "DaemonStartError", "find_daemon", "start_daemon", "SessionDagError",
           "BrokenPredecessorChainError", "ConfigError", "HeadMismatchError", "InvalidCursorError",
           "InvalidNodeError", "InvalidSessionIdError", "NotFoundError", "PredecessorMissingError",
           "ReplayRefusedError", "SessionBusyError", "SessionDeletedError", "SessionExistsError", "SessionResumeError", "StorageError",
           "StorageFullError", "WorkingDirUnboundError", "WorkspaceDirtyError", "TurnRunningError",
           "NoCheckpointError", "Branch", "BranchPage", "Call", "SessionHandle", "Usage"]


def __getattr__(name: str) -> object:
    """A public name, imported from its module the first time it is read (then cached here)."""
    where = _FROM.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
