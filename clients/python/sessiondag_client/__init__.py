"""Python client for the sessiondag daemon: `connect()` (async) and `SyncClient` (blocking).

It speaks the wire protocol only (`sessiondag_client.wire`) and imports nothing from the daemon package."""

from .client import AsyncClient
from .connecting import connect, connect_tcp, connect_unix, spawn_stdio
from .deadlines import DaemonNotResponding
from .discovery import DaemonNotRunningError, DaemonStartError, find_daemon, start_daemon
from .errors import (ConnectionClosedError, InvalidParamsError, MethodNotFoundError, RequestCancelledError,
                     RpcError, SessionDagError)
from .sync import SyncClient
from .wire.errors import (BrokenPredecessorChainError, ConfigError, HeadMismatchError, InvalidCursorError,
                          InvalidNodeError, InvalidSessionIdError, NotFoundError, PredecessorMissingError,
                          ReplayRefusedError, SessionBusyError, SessionDeletedError, SessionExistsError, SessionResumeError,
                          NoCheckpointError, StorageError, StorageFullError, TurnRunningError,
                          WorkingDirUnboundError, WorkspaceDirtyError)
from .wire.types import Branch, BranchPage, Call, SessionHandle, Usage

__all__ = ["AsyncClient", "connect", "connect_tcp", "connect_unix", "spawn_stdio", "SyncClient", "RpcError",
           "InvalidParamsError", "MethodNotFoundError", "RequestCancelledError", "ConnectionClosedError",
           "DaemonNotRunningError", "DaemonNotResponding", "DaemonStartError", "find_daemon", "start_daemon", "SessionDagError",
           "BrokenPredecessorChainError", "ConfigError", "HeadMismatchError", "InvalidCursorError",
           "InvalidNodeError", "InvalidSessionIdError", "NotFoundError", "PredecessorMissingError",
           "ReplayRefusedError", "SessionBusyError", "SessionDeletedError", "SessionExistsError", "SessionResumeError", "StorageError",
           "StorageFullError", "WorkingDirUnboundError", "WorkspaceDirtyError", "TurnRunningError",
           "NoCheckpointError", "Branch", "BranchPage", "Call", "SessionHandle", "Usage"]
