"""Python client for the sessiondag daemon: `connect()` (async) and `SyncClient` (blocking)."""

from .client import AsyncClient, connect, connect_tcp, connect_unix, spawn_stdio
from .discovery import DaemonNotRunningError, DaemonStartError, find_daemon, start_daemon
from .errors import (ConnectionClosedError, InvalidParamsError, MethodNotFoundError, RequestCancelledError,
                     RpcError)
from .sync import SyncClient

__all__ = ["AsyncClient", "connect", "connect_tcp", "connect_unix", "spawn_stdio", "SyncClient", "RpcError",
           "InvalidParamsError", "MethodNotFoundError", "RequestCancelledError", "ConnectionClosedError",
           "DaemonNotRunningError", "DaemonStartError", "find_daemon", "start_daemon"]
