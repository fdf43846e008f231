"""The MCP servers of one session, through the official `mcp` SDK (docs/mcp.md).

The seam: the agent loop is sync code in worker threads, the SDK is async (anyio). One `McpServers`
per session owns one anyio blocking portal (a thread running one event loop); every connection of the
session lives in that loop, one task per server holding the SDK's `Client` open (its contexts are
entered and left in that task, as anyio requires). Worker threads call in through the portal
(`start_task_soon(...).result()`), bounded by a timeout, so the loop is never shared with the
daemon's own event loop.

- `start()` connects every server (stdio: spawned in the session's working dir — or the entry's
  `cwd` below it — with the configured env over the SDK's safe default environment; http / sse:
  the URL with its headers) and lists its tools. A server that does not come up raises
  McpServerError (reason start_failed) naming it; the others stay up.
- `call(server, tool, args)`: one `tools/call`, after a `tools/list` that proves the connection
  alive. A connection found dead (the process exited, the HTTP session ended) is restarted first,
  at most MAX_RESTARTS times per session; a call the server dies during fails (it may have had
  effects: never sent twice) and the next call restarts it.
- `stop()`: closes every connection (the SDK closes stdin, then terminates the process tree) and
  the loop. Idempotent.
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from .. import __version__
from ..core.errors import McpServerError
from ..core.mcp_config import McpServer

START_TIMEOUT = 60.0
CONNECTION_CLOSED = -32000   # mcp_types.CONNECTION_CLOSED: the transport closed under a request
CALL_TIMEOUT = 600.0
MAX_RESTARTS = 3


@dataclass
class McpTool:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)


class _Conn:
    """One server's connection: a task in the manager's loop holds the SDK client open."""

    def __init__(self, spec: McpServer, working_dir: str):
        self.spec = spec
        self.working_dir = working_dir
        self.client: Any = None
        self.tools: list[McpTool] = []
        self.ready: anyio.Event | None = None        # set once the tools are listed, or the start failed
        self.start_error: BaseException | None = None
        self.closing: anyio.Event | None = None
        self.task: concurrent.futures.Future[None] | None = None   # run(), in the portal
        self.dead = False
        self.restarts = 0

    def transport(self) -> Any:
        from mcp.client.stdio import StdioServerParameters, get_default_environment
        s = self.spec
        if s.transport == "stdio":
            cwd = os.path.realpath(os.path.join(self.working_dir, s.cwd or "."))
            return StdioServerParameters(command=s.command, args=list(s.args),
                                         env={**get_default_environment(), **s.env}, cwd=cwd)
        if s.transport == "sse":
            from mcp.client.sse import sse_client
            return sse_client(s.url, headers=dict(s.headers) or None)
        if s.headers:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client
            http = httpx2.AsyncClient(headers=dict(s.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            return streamable_http_client(s.url, http_client=http)
        return s.url

    async def run(self) -> None:
        from mcp import Client
        from mcp_types import Implementation
        assert self.ready is not None and self.closing is not None   # McpServers._spawn made them
        self.dead = False
        try:
            async with Client(self.transport(), client_info=Implementation(name="sessiondag", version=__version__),
                              cache=None) as client:
                self.client = client
                self.tools = await self._list(client)
                self.ready.set()
                await self.closing.wait()
        except BaseException as e:  # noqa: BLE001 - reported through `ready`, or the connection is dead
            if not self.ready.is_set():
                self.start_error = e if isinstance(e, Exception) else RuntimeError(repr(e))
                self.ready.set()
            if isinstance(e, anyio.get_cancelled_exc_class()):
                raise
        finally:
            self.client = None
            self.dead = True

    async def wait_ready(self) -> None:
        """Until the server listed its tools; its start's error, or TimeoutError after START_TIMEOUT."""
        assert self.ready is not None
        with anyio.fail_after(START_TIMEOUT):
            await self.ready.wait()
        if self.start_error is not None:
            raise self.start_error

    async def _list(self, client: Any) -> list[McpTool]:
        out, cursor = [], None
        for _ in range(100):   # a server paging forever cannot hang the start
            page = await client.list_tools(cursor=cursor)
            for t in page.tools:
                ann = t.annotations.model_dump(exclude_none=True) if t.annotations is not None else {}
                out.append(McpTool(self.spec.name, t.name, t.description or t.title or t.name,
                                   dict(t.input_schema or {"type": "object"}), ann))
            cursor = page.next_cursor
            if cursor is None:
                break
        return out


def _explain(e: BaseException) -> str:
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"[:2000]


class McpServers:
    def __init__(self, servers: dict[str, McpServer], working_dir: str):
        self.servers = dict(servers)
        self.working_dir = working_dir
        self._conns = {name: _Conn(s, working_dir) for name, s in self.servers.items()}
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._lifecycle = threading.Lock()   # start / restart / stop, one at a time
        self._closed = False
        self.errors: dict[str, McpServerError] = {}

    # --- the portal (the loop thread) ---------------------------------------------------------------
    def _ensure_portal(self) -> BlockingPortal:
        with self._lock:
            if self._closed:
                name = next(iter(self.servers), "?")
                raise McpServerError(name, "crashed", "the session's MCP servers were stopped")
            if self._portal is None:   # a daemon thread: a session never stopped cannot hold up an exit
                box: list[BlockingPortal] = []
                started = threading.Event()

                async def serve() -> None:
                    async with BlockingPortal() as portal:
                        box.append(portal)
                        started.set()
                        await portal.sleep_until_stopped()
                self._thread = threading.Thread(target=anyio.run, args=(serve,), daemon=True, name="sessiondag-mcp")
                self._thread.start()
                started.wait()
                self._portal = box[0]
            return self._portal

    def _run(self, fn: Callable[[], Awaitable[Any]], timeout: float) -> Any:
        fut = self._ensure_portal().start_task_soon(fn)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise

    # --- connections -------------------------------------------------------------------------------
    def _spawn(self, conn: _Conn) -> None:
        """Start the task that holds `conn` open (a worker thread: the portal's tasks are started from
        outside its loop); `conn.wait_ready()` in the portal tells when it is up."""
        portal = self._ensure_portal()
        conn.ready, conn.closing = portal.call(lambda: (anyio.Event(), anyio.Event()))   # made in its loop
        conn.start_error = None
        conn.task = portal.start_task_soon(conn.run)

    def _failed(self, conn: _Conn, reason: str, e: BaseException | str) -> McpServerError:
        err = McpServerError(conn.spec.name, reason, e if isinstance(e, str) else _explain(e), conn.spec.origin)
        self.errors[conn.spec.name] = err
        return err

    def start(self) -> None:
        """Connect every server not connected yet; the first that fails is raised (after all tried)."""
        try:
            import mcp  # noqa: F401
        except ImportError:
            name = next(iter(self.servers), "?")
            raise McpServerError(name, "unavailable", "the `mcp` package is not installed "
                                 "(pip install 'sessiondag[mcp]')") from None
        with self._lifecycle:
            self._start()

    def _start(self) -> None:
        todo = [c for c in self._conns.values() if c.task is None]
        results: list[BaseException | None] = [None] * len(todo)

        async def all_() -> None:
            async def one(i: int, conn: _Conn) -> None:
                try:
                    await conn.wait_ready()
                except Exception as e:  # noqa: BLE001 - each server's own failure
                    results[i] = e
            async with anyio.create_task_group() as tg:
                for i, conn in enumerate(todo):
                    tg.start_soon(one, i, conn)
        for conn in todo:
            self._spawn(conn)
        if todo:
            self._run(all_, START_TIMEOUT + 5)
        first: McpServerError | None = None
        for conn, res in zip(todo, results):
            if isinstance(res, BaseException):
                err = self._failed(conn, "start_failed", res)
                first = first or err
        if first is not None:
            raise first

    def tools(self) -> list[McpTool]:
        """The tools every server listed when it (last) started — a crashed one's too: calling one
        restarts it, and the tool list (so the system prompt) stays the same."""
        return [t for c in self._conns.values() for t in c.tools]

    def _restart(self, conn: _Conn) -> None:
        if conn.restarts >= MAX_RESTARTS:
            raise self._failed(conn, "crashed", f"restarted {MAX_RESTARTS} times already; not again this session")
        conn.restarts += 1
        with self._lifecycle:
            self._reconnect(conn)
        self.errors.pop(conn.spec.name, None)

    def _reconnect(self, conn: _Conn) -> None:
        self._close(conn)
        try:
            self._spawn(conn)
            self._run(conn.wait_ready, START_TIMEOUT + 5)
        except McpServerError:
            raise
        except Exception as e:
            raise self._failed(conn, "crashed", f"it could not be restarted: {_explain(e)}") from None

    def _close(self, conn: _Conn) -> None:
        """End `conn`'s task (a worker thread): its SDK client closes; one that takes over 10 s is cancelled."""
        if conn.closing is not None and self._portal is not None:
            self._portal.call(conn.closing.set)
        if conn.task is not None:
            _, pending = concurrent.futures.wait({conn.task}, timeout=10)
            for t in pending:
                t.cancel()
        conn.task = None

    def _live(self, conn: _Conn) -> bool:
        """The connection answers a `tools/list` (a server that died between calls does not). Not
        `ping`: the 2026-07-28 protocol removed it, and the SDK shows no closed state."""
        if conn.dead or conn.task is None or conn.client is None:
            return False

        async def ping() -> None:
            await conn.client.list_tools(cache_mode="refresh")
        try:
            self._run(ping, 10)
            return True
        except Exception:  # noqa: BLE001 - closed, broken, or no answer: dead
            conn.dead = True
            return False

    def call(self, server: str, tool: str, arguments: dict[str, Any], timeout: float = CALL_TIMEOUT) -> Any:
        """The tool's CallToolResult. A connection found dead first (a ping goes unanswered) is
        restarted; one that dies during the call fails it (McpServerError reason crashed) and is
        restarted on the next call: the call itself is never sent twice."""
        conn = self._conns[server]
        if not self._live(conn):
            self._restart(conn)

        async def go() -> Any:
            return await conn.client.call_tool(tool, arguments)
        try:
            return self._run(go, timeout)
        except Exception as e:
            if getattr(getattr(e, "error", None), "code", None) == CONNECTION_CLOSED or conn.dead:
                conn.dead = True
                raise self._failed(conn, "crashed", f"the server went away during the call: {_explain(e)}") from None
            raise

    def alive(self) -> dict[str, bool]:
        return {name: not c.dead and c.task is not None for name, c in self._conns.items()}

    def stop(self) -> None:
        """Stop every server and the loop, for good: a start still under way is waited for (its
        servers are stopped too), and later calls fail with McpServerError instead of starting
        anything again."""
        with self._lifecycle:
            self._stop()

    def _stop(self) -> None:
        with self._lock:
            self._closed = True
            portal = self._portal
        if portal is None:
            return
        try:
            for conn in self._conns.values():   # each closes in its own task: together
                if conn.closing is not None:
                    portal.call(conn.closing.set)
            for conn in self._conns.values():
                self._close(conn)
        except Exception as e:  # noqa: BLE001 - stopping must not fail the caller
            print(f"sessiondag: MCP servers did not stop cleanly: {_explain(e)}", file=sys.stderr)
        try:
            portal.call(portal.stop, True)   # what is left is cancelled; the loop thread ends
        except Exception as e:  # noqa: BLE001
            print(f"sessiondag: MCP servers' event loop did not stop cleanly: {_explain(e)}", file=sys.stderr)
        with self._lock:
            self._portal = None
        if self._thread is not None:
            self._thread.join(10)
