"""`sessiondag serve`: the JSON-RPC daemon over stdio, a Unix socket and/or loopback TCP.

    sessiondag serve --stdio                      one client: the parent process
    sessiondag serve --socket [PATH]              default: <runtime dir>/sd-<state-key>.sock (0600)
    sessiondag serve --tcp 127.0.0.1:PORT         port 0 picks one; token in a 0600 file
    options: --state-dir DIR  --idle-timeout SECONDS  --token-file PATH  --log-file PATH  --threads N  -v
             --max-open-sessions N  --session-idle-timeout SECONDS

One readiness line goes to stderr when every listener is up, e.g.
`sessiondag: ready pid=123 socket=/run/user/1000/sessiondag/sd-….sock`; logs go to stderr too (or,
with --log-file, to that file). A socket/TCP daemon records itself in `<state dir>/daemon.pid` (pid,
socket, tcp, log, version): clients find it there whatever their $XDG_RUNTIME_DIR says.
`--stdio` answers every request received before stdin's EOF, then exits. Setup failures (another
daemon serves the state dir, a non-loopback --tcp host, stdout not a pipe for --stdio) are one line
on stderr and exit status 3 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import stat
import sys
import time

from .. import __version__
from . import daemon_start
from ..rpc import (agent_methods, checkpoint_methods, replay_methods, session_methods, sync_methods,  # noqa: F401
               usage_methods)  # registers the methods
from ..rpc.connection import Connection
from ..rpc.daemon import Daemon
from ..rpc import params as rpc_params
from ..rpc.fd_budget import raise_soft_limit
from ..rpc.transports import (LISTEN_BACKLOG, StateDirLock, TransportError, bind_unix, check_loopback,
                              default_socket_path, default_token_path, stdio_streams, write_token)
from ..context.store_factory import open_store
from ..store.handles import default_state_dir
from ..store.layout import loose_permissions
from ..core.settings import Settings
from ..core.settings_source import current as current_settings
from .common import Parser

READER_LIMIT = 64 << 10


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = Parser(prog="sessiondag serve", description="Run the sessiondag JSON-RPC daemon.")
    ap.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    ap.add_argument("--socket", nargs="?", const="", default=None, metavar="PATH",
                    help="serve on a Unix socket (default path in the private runtime dir)")
    ap.add_argument("--tcp", metavar="HOST:PORT", help="serve on loopback TCP (token required)")
    ap.add_argument("--state-dir", default=None, help="session store (default $SESSIONDAG_HOME …)")
    ap.add_argument("--idle-timeout", type=float, default=None, help="exit after this many idle seconds")
    ap.add_argument("--token-file", default=None, help="where to write the TCP token (0600)")
    ap.add_argument("--log-file", default=None, help="append logs (stderr) to this file")
    ap.add_argument("--threads", type=int, default=8, help="worker threads for store work")
    ap.add_argument("--max-open-sessions", type=int, default=None, metavar="N",
                    help="keep at most N sessions loaded; the least recently used idle ones are closed (default 512)")
    ap.add_argument("--session-idle-timeout", type=float, default=None, metavar="SECONDS",
                    help="close a session nothing used for this long (default 600; 0 = never)")
    ap.add_argument("--parent-pid", type=int, default=None, metavar="PID",
                    help="with --stdio: end at once (SIGKILL) when process PID, the parent, ends — a private "
                         "child such as `sessiondag run`'s, whose turn then is a crash, finalized at the next open")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    if not (a.stdio or a.socket is not None or a.tcp):
        ap.error("choose a transport: --stdio, --socket [PATH] or --tcp HOST:PORT")
    if a.stdio and (a.socket is not None or a.tcp):
        ap.error("--stdio serves its parent alone; it cannot be combined with --socket/--tcp")
    if a.tcp:
        host, sep, port = a.tcp.rpartition(":")
        if not sep or not port.isdigit() or int(port) > 65535:
            ap.error(f"--tcp takes HOST:PORT (port 0 picks one), not {a.tcp!r}")
    return a


def _setup_error(a: argparse.Namespace) -> str | None:
    """Why this invocation cannot serve, checked before anything starts (None: it can)."""
    if a.stdio:
        mode = os.fstat(1).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            return ("--stdio speaks JSON-RPC to the parent process over a pipe, but stdout is a file; "
                    "run it from a client (e.g. sessiondag_client.spawn_stdio) or use --socket")
    if a.tcp:
        try:
            check_loopback(a.tcp.rpartition(":")[0].strip("[]") or "127.0.0.1")
        except TransportError as e:
            return str(e)
    return None


async def _serve(a: argparse.Namespace, settings: Settings) -> int:
    daemon_start.private()   # the start lock a starter handed down (cli/daemon_start.py) stays ours
    loop = asyncio.get_running_loop()
    state_dir = os.path.abspath(a.state_dir or default_state_dir(settings))
    store = open_store(state_dir, settings=settings)
    for loose in loose_permissions(state_dir):  # another local user could plant sessions or symlinks
        logging.getLogger("sessiondag.serve").warning("%s: group or others may write it; chmod 700 it "
                                                      "(docs/security.md)", loose)
    lock = None
    servers: list[asyncio.AbstractServer] = []
    cleanup: list[str] = []
    ready = [f"pid={os.getpid()}", f"state_dir={state_dir}"]
    raise_soft_limit()
    daemon = Daemon(store, idle_timeout=a.idle_timeout, max_threads=a.threads,
                    max_open_sessions=a.max_open_sessions, session_idle_timeout=a.session_idle_timeout)
    daemon.log_path = os.path.abspath(a.log_file) if a.log_file else None
    token = None
    try:
        if not a.stdio:
            lock = StateDirLock(state_dir)
            lock.acquire()
            rpc_params.warm()   # a shared daemon builds every validator before it listens; a --stdio child,
            # which answers a handful of methods, each at its first request (rpc/params.py)
        await daemon.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, daemon.stop, "signal")
        info: dict[str, str] = {}
        if a.socket is not None:
            path = os.path.abspath(a.socket) if a.socket else default_socket_path(state_dir)
            sock = bind_unix(path)
            cleanup.append(path)

            async def on_unix(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await Connection(daemon, reader, writer, transport="socket").run()
            servers.append(await asyncio.start_unix_server(on_unix, sock=sock, limit=READER_LIMIT,
                                                           backlog=LISTEN_BACKLOG))
            daemon.transports.append(f"socket:{path}")
            info["socket"] = path
            daemon.socket_path = path
            ready.append(f"socket={path}")
        if a.tcp:
            host, _, port = a.tcp.rpartition(":")
            host = check_loopback(host.strip("[]") or "127.0.0.1")
            token_path = os.path.abspath(a.token_file) if a.token_file else default_token_path(state_dir)
            token = write_token(token_path)
            cleanup.append(token_path)

            async def on_tcp(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await Connection(daemon, reader, writer, transport="tcp", token=token).run()
            srv = await asyncio.start_server(on_tcp, host, int(port), limit=READER_LIMIT, backlog=LISTEN_BACKLOG)
            servers.append(srv)
            bound = srv.sockets[0].getsockname()
            addr = f"{bound[0]}:{bound[1]}" if ":" not in bound[0] else f"[{bound[0]}]:{bound[1]}"
            daemon.transports.append(f"tcp:{addr}")
            info.update(tcp=addr, token_file=token_path)
            ready += [f"tcp={addr}", f"token_file={token_path}"]
        if lock is not None:
            lock.write({**info, "state_dir": state_dir, "version": __version__, "started_at": time.time(),
                        "log": daemon.log_path})
        daemon_start.ready()   # it answers now: the next starter may look
        stdio_task = None
        if a.stdio:
            reader, writer = await stdio_streams(READER_LIMIT)
            conn = Connection(daemon, reader, writer, transport="stdio", answer_at_eof=True)
            daemon.transports.append("stdio")
            ready.insert(0, "stdio")

            async def run_stdio() -> None:
                await conn.run()
                daemon.stop("stdio_closed")
            stdio_task = daemon.spawn(run_stdio())
        print("sessiondag: ready " + " ".join(ready), file=sys.stderr, flush=True)
        await daemon.wait_stopped()
        for server in servers:
            server.close()
        await daemon.shutdown()
        if stdio_task is not None:  # SIGTERM with stdin still open: stop reading it
            stdio_task.cancel()
            with contextlib.suppress(BaseException):
                await stdio_task
        return 0
    except TransportError as e:
        print(f"sessiondag: {e}", file=sys.stderr, flush=True)
        return 3
    finally:
        daemon.service.close_watchers()   # even when shutdown failed: a watcher's thread would keep the process alive
        for p in cleanup:
            with contextlib.suppress(OSError):
                os.unlink(p)
        store.close()
        if lock is not None:
            lock.release()


def _die_with(parent: int) -> None:
    """SIGKILL this process when its parent ends (Linux PR_SET_PDEATHSIG); if `parent` is gone
    already (it died before this ran), end now."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        print(f"sessiondag serve: prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}",
              file=sys.stderr, flush=True)
    if os.getppid() != parent:
        os._exit(1)


def main(argv: list[str]) -> int:
    try:
        a = parse_args(argv)
    except SystemExit as e:
        return 0 if e.code in (0, None) else 2
    if a.log_file:
        fd = os.open(a.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    if a.parent_pid is not None:
        _die_with(a.parent_pid)
    why = _setup_error(a)
    if why:
        print(f"sessiondag serve: {why}", file=sys.stderr, flush=True)
        return 3
    logging.basicConfig(level=logging.DEBUG if a.verbose else logging.WARNING, stream=sys.stderr,
                        format="sessiondag[%(process)d] %(levelname)s %(name)s: %(message)s")
    # store writes run in worker threads that wake from fdatasync needing the GIL while the event
    # loop thread is busy with frames; the default 5 ms switch interval convoys them behind it.
    settings = current_settings()  # the daemon's, resolved once (cli/__init__.py): its store keeps them
    sys.setswitchinterval(settings.switch_interval)  # the setting daemon.switch_interval
    try:
        return asyncio.run(_serve(a, settings))
    except KeyboardInterrupt:
        return 130
