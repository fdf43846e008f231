"""Connecting a client to a daemon: a Unix socket, loopback TCP with a token, a spawned
`sessiondag serve --stdio`, or `connect()` which finds (or auto-starts) the daemon of a state dir."""

from __future__ import annotations

import contextlib
import math
import subprocess
from typing import IO, Iterator, Literal, TypedDict, Unpack, cast, overload

import anyio

from .client import AsyncClient
from .deadlines import DEFAULT_TIMEOUT, DaemonNotResponding
from .discovery import DaemonNotRunningError, serve_command, short_address, socket_for, start_daemon, state_dir_of
from .framing import FramedStream
from .socket_stream import open_tcp, open_unix


class Named(TypedDict, total=False):
    """What a client says of itself in `initialize` (connection.py `_start`)."""
    client_name: str


class Handshake(Named, total=False):
    """`initialize`'s options: the client's name, a TCP daemon's token."""
    token: str | None


class ConnectOptions(Named, total=False):
    """What `connect` hands on to every transport."""
    timeout: float | None


class StdioOptions(ConnectOptions, total=False):
    """What `connect(stdio=True)` hands on to `spawn_stdio`."""
    extra_args: tuple[str, ...]
    env: dict[str, str] | None
    stderr: int | IO[bytes] | None
    new_session: bool


class SyncConnectOptions(StdioOptions, total=False):
    """`connect`'s keywords, as SyncClient.connect hands them on."""
    tcp: str | None
    token: str | None
    token_file: str | None
    stdio: bool
    state_dir: str | None
    auto_start: bool
    start_timeout: float
    idle_timeout: float | None


async def connect_unix(path: str, *, timeout: float | None = DEFAULT_TIMEOUT, **kw: Unpack[Handshake]) -> AsyncClient:
    """`timeout`: seconds for the connection, its handshake and each answer (deadlines.py)."""
    with short_address(path) as addr, _connecting(path, timeout):
        s, pid = await open_unix(addr)
    return await AsyncClient(FramedStream(s, s), s.aclose, timeout=timeout, peer_pid=pid)._start(**kw)


async def connect_tcp(host: str, port: int, *, token: str | None = None, token_file: str | None = None,
                      timeout: float | None = DEFAULT_TIMEOUT, **kw: Unpack[Named]) -> AsyncClient:
    if token is None and token_file is not None:
        with open(token_file) as f:
            token = f.read().strip()
    with _connecting(f"{host}:{port}", timeout):
        s = await open_tcp(host, port)
    return await AsyncClient(FramedStream(s, s), s.aclose, timeout=timeout)._start(token=token, **kw)


@contextlib.contextmanager
def _connecting(address: str, timeout: float | None) -> Iterator[None]:
    try:
        with anyio.fail_after(timeout if timeout is not None else math.inf):
            yield
    except TimeoutError:
        raise DaemonNotResponding(None, f"a connection to {address}", math.inf if timeout is None else timeout) from None


async def spawn_stdio(state_dir: str | None = None, *, extra_args: tuple[str, ...] = (),
                      env: dict[str, str] | None = None, stderr: int | IO[bytes] | None = None,
                      timeout: float | None = DEFAULT_TIMEOUT, new_session: bool = False,
                      **kw: Unpack[Handshake]) -> AsyncClient:
    """A private `sessiondag serve --stdio` child and a client on its pipes. `new_session`: the child
    in a session of its own, so a terminal's ^C reaches only this process (which cancels what it
    asked: `sessiondag run`); the child exits at its stdin's EOF (`aclose`)."""
    args = ["--stdio", *(["--state-dir", str(state_dir)] if state_dir else []), *extra_args]
    proc = await anyio.open_process(serve_command(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=stderr, env=env, start_new_session=new_session)

    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None   # both piped

    async def closer() -> None:
        try:
            await stdin.aclose()
        except Exception:  # noqa: BLE001
            pass
        try:
            with anyio.fail_after(10):
                await proc.wait()
        except TimeoutError:
            proc.terminate()
            await proc.wait()
    client = AsyncClient(FramedStream(stdin, stdout), closer, timeout=timeout, peer_pid=proc.pid)
    client.process = proc
    return await client._start(**kw)


@overload
async def connect(socket: str | None = None, *, tcp: str | None = None, token: str | None = None,
                  token_file: str | None = None, stdio: Literal[False] = False, state_dir: str | None = None,
                  auto_start: bool = False, start_timeout: float = 20.0, idle_timeout: float | None = 300.0,
                  **kw: Unpack[ConnectOptions]) -> AsyncClient: ...


@overload
async def connect(socket: str | None = None, *, tcp: str | None = None, token: str | None = None,
                  token_file: str | None = None, stdio: bool, state_dir: str | None = None,
                  auto_start: bool = False, start_timeout: float = 20.0, idle_timeout: float | None = 300.0,
                  **kw: Unpack[StdioOptions]) -> AsyncClient: ...


async def connect(socket: str | None = None, *, tcp: str | None = None, token: str | None = None,
                  token_file: str | None = None, stdio: bool = False, state_dir: str | None = None,
                  auto_start: bool = False, start_timeout: float = 20.0, idle_timeout: float | None = 300.0,
                  **kw: Unpack[StdioOptions]) -> AsyncClient:
    """Connect to a daemon: a Unix socket (default: the one serving `state_dir`, found through its
    pidfile — see discovery.py), TCP or a spawned stdio one.

    No daemon answers: `DaemonNotRunningError` (socket path and the command to run), or with
    auto_start=True, start `sessiondag serve --socket` detached (log in `<state dir>/daemon.log`,
    exiting after `idle_timeout` seconds without clients) and connect once it is ready; a child that
    fails raises `DaemonStartError` with its own message at once."""
    if stdio:
        return await spawn_stdio(state_dir, **kw)
    opts = cast(ConnectOptions, kw)   # not stdio: no stdio option (the overloads above)
    if tcp is not None:
        host, _, port = tcp.rpartition(":")
        return await connect_tcp(host.strip("[]"), int(port), token=token, token_file=token_file, **opts)
    sd = state_dir_of(state_dir)
    path = socket or socket_for(sd)
    try:
        return await connect_unix(path, **opts)
    except DaemonNotResponding:  # a TimeoutError, so an OSError: there is a daemon, it does not answer
        raise
    except OSError:
        if not auto_start:
            raise DaemonNotRunningError(sd, path) from None
    info = await anyio.to_thread.run_sync(
        lambda: start_daemon(sd, socket=socket, idle_timeout=idle_timeout, timeout=start_timeout))
    return await connect_unix(info["socket"], **opts)
