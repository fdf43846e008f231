"""The MCP servers of one session, through the official `mcp` SDK (docs/mcp.md).

The seam: the agent loop is sync code in worker threads, the SDK is async (anyio). One `McpServers`
per session owns one thread running one asyncio event loop; every connection of the session lives in
that loop, one task per server holding the SDK's `Client` open (its contexts are entered and left in
that task, as anyio requires). Worker threads call in with `run_coroutine_threadsafe(...).result()`,
bounded by a timeout, so the loop is never shared with the daemon's own event loop.

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

import asyncio
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

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
        self.ready: asyncio.Future | None = None
        self.closing: asyncio.Event | None = None
        self.task: asyncio.Task | None = None
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
        self.ready = asyncio.get_running_loop().create_future()
        self.closing = asyncio.Event()
        self.dead = False
        try:
            async with Client(self.transport(), client_info=Implementation(name="sessiondag", version=__version__),
                              cache=None) as client:
                self.client = client
                self.tools = await self._list(client)
                self.ready.set_result(None)
                await self.closing.wait()
        except BaseException as e:  # noqa: BLE001 - reported through `ready`, or the connection is dead
            if not self.ready.done():
                self.ready.set_exception(e if isinstance(e, Exception) else RuntimeError(repr(e)))
            if isinstance(e, asyncio.CancelledError):
                raise
        finally:
            self.client = None
            self.dead = True

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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._lifecycle = threading.Lock()   # start / restart / stop, one at a time
        self._closed = False
        self.errors: dict[str, McpServerError] = {}

    # --- the loop thread -------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                name = next(iter(self.servers), "?")
                raise McpServerError(name, "crashed", "the session's MCP servers were stopped")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                started = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(started.set)
                    loop.run_forever()
                    loop.close()
                self._thread = threading.Thread(target=run, daemon=True, name="sessiondag-mcp")
                self._thread.start()
                started.wait()
                self._loop = loop
            return self._loop

    def _run(self, coro: Any, timeout: float) -> Any:
        fut = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise

    # --- connections -------------------------------------------------------------------------------
    async def _connect(self, conn: _Conn) -> None:
        conn.task = asyncio.get_running_loop().create_task(conn.run())
        await asyncio.sleep(0)
        await asyncio.wait_for(asyncio.shield(conn.ready), START_TIMEOUT)

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

        async def all_() -> list[BaseException | None]:
            return await asyncio.gather(*(self._connect(c) for c in todo), return_exceptions=True)
        results = self._run(all_(), START_TIMEOUT + 5) if todo else []
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
        self._run(self._close(conn), 20)
        try:
            self._run(self._connect(conn), START_TIMEOUT + 5)
        except McpServerError:
            raise
        except Exception as e:
            raise self._failed(conn, "crashed", f"it could not be restarted: {_explain(e)}") from None

    @staticmethod
    async def _close(conn: _Conn) -> None:
        if conn.closing is not None:
            conn.closing.set()
        if conn.task is not None:
            _, pending = await asyncio.wait({conn.task}, timeout=10)
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
            self._run(ping(), 10)
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
            return self._run(go(), timeout)
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
            loop, self._loop = self._loop, None
        if loop is None:
            return

        async def close() -> None:
            await asyncio.gather(*(self._close(c) for c in self._conns.values()))
        try:
            asyncio.run_coroutine_threadsafe(close(), loop).result(20)
        except Exception as e:  # noqa: BLE001 - stopping must not fail the caller
            print(f"sessiondag: MCP servers did not stop cleanly: {_explain(e)}", file=sys.stderr)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
