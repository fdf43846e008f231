"""One client connection: its own protocol state over the daemon's shared core.

Reads frames (codec.py), checks params against rpc_schema (params.py), dispatches requests to the
method table (registry.py) as one task each, answers them in whatever order they finish, handles the
LSP lifecycle (initialize / shutdown / exit), `$/cancelRequest`, and server→client requests
(`request`). A broken frame closes this connection only; a bad message gets a JSON-RPC error; an
exception in a handler is an internal error for that request.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import itertools
import logging
import types

from sessiondag_client.wire import errors as wire_errors
from .. import __version__
from . import codec, params as rpc_params
from sessiondag_client.wire.errors import (INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
                                           PARSE_ERROR, REQUEST_CANCELLED, SERVER_NOT_INITIALIZED)

from .daemon import Daemon
from .errors import error_object
from .registry import LATER, METHODS, NOW, Handler, NowHandler, RequestContext
from .outbox import Outbox

log = logging.getLogger("sessiondag.rpc")
PROTOCOL_VERSION = "1.0"
MAX_BACKLOG = 256 << 20  # bytes queued for one client before it is considered gone
MAX_CLIENT_INFO = 4096  # bytes of `initialize` client_info kept (shown by daemon/status)
MAX_IN_FLIGHT = 1024     # requests of one client running at once; beyond, its frames wait unread
NOTIFICATIONS = ("session/did_change", "session/did_unbind", "session/did_rebind", "session/did_delete",
                 "agent/did_update", "daemon/will_stop")
_conn_ids = itertools.count(1)


def unwrap_group(exc: BaseException) -> BaseException:
    """The one error inside (nested) exception groups, so a typed error raised in a task group keeps
    its own code; a group of several different errors stays as it is (an internal error)."""
    while isinstance(exc, BaseExceptionGroup):
        leaves = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if len(leaves) != 1:
            return exc
        exc = leaves[0]
    return exc


def _valid_id(v: object) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, str)


class Connection:
    def __init__(self, daemon: Daemon, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, transport: str,
                 token: str | None = None, answer_at_eof: bool = False):
        self.daemon = daemon
        self.answer_at_eof = answer_at_eof  # stdio: the parent's requests read before EOF are answered
        self.reader = reader
        self.writer = writer
        self.transport = transport
        self.token = token
        self.id = f"{transport}-{next(_conn_ids)}"
        self.client_info: dict[str, object] = {}
        self.initialized = False
        self.shutting_down = False
        self.closed = False
        self.exit_requested = False
        self.tasks: dict[object, asyncio.Task[None]] = {}    # request id (int or str) -> its task
        self.pending: dict[str, asyncio.Future[object]] = {}
        self.subscriptions: set[str] = set()
        self._slot_free = asyncio.Event()  # set whenever a request of this connection finishes
        self._req_ids = itertools.count(1)
        self.answered_now = 0  # requests answered in the read loop's turn (rpc/answer_now.py)
        self.outbox = Outbox(writer)

    # --- ClientChannel -----------------------------------------------------------------------
    async def notify(self, method: str, params: dict[str, object]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})
        await self._drain()

    async def request(self, method: str, params: dict[str, object]) -> object:
        if self.closed:
            raise ConnectionError(f"client {self.id} is gone")
        rid = f"srv-{next(self._req_ids)}"
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        try:
            self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            await self._drain()
            return await fut
        finally:
            self.pending.pop(rid, None)

    def in_flight(self) -> int:
        return len(self.tasks)

    # --- output ------------------------------------------------------------------------------
    def send(self, msg: dict[str, object]) -> None:
        """Queue one JSON-RPC message to this client, in order, without waiting (a no-op once the
        client is gone); `notify` and `request` are the waiting forms."""
        if self.closed:
            return
        try:
            parts = codec.encode_parts(msg)
        except TypeError as e:  # a result orjson cannot encode: answer with an internal error instead
            if "id" not in msg or "method" in msg:
                log.error("dropping an unencodable message: %s", e)
                return
            parts = codec.encode_parts({"jsonrpc": "2.0", "id": msg["id"],
                                        "error": {"code": INTERNAL_ERROR, "message": f"unencodable result: {e}",
                                                  "data": {"kind": "internal_error", "type": "TypeError"}}})
        try:
            self.outbox.write(parts)  # in order; a big spliced frame without copies (rpc/outbox.py)
            if self.outbox.backlog() > MAX_BACKLOG:  # a client that never reads: drop it
                log.warning("closing %s: more than %d bytes unread", self.id, MAX_BACKLOG)
                self.closed = True
                self.outbox.abort()
        except Exception:  # transport already gone
            self.closed = True

    def _backed_up(self) -> bool:
        """More than 1 MiB sent to this client and not yet taken by the kernel (it reads slowly)."""
        t = getattr(self.writer, "transport", None)
        return t is None or t.get_write_buffer_size() >= 1 << 20

    async def _drain(self) -> None:
        if not self._backed_up():
            return
        try:
            await self.writer.drain()
        except (ConnectionError, RuntimeError):
            self.closed = True

    def _error(self, rid: object, code: int, message: str, data: object = None) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": wire_errors.error_object(code, message, data)})

    # --- input -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Serve this connection until EOF, `exit`, a broken frame or daemon shutdown: the one read
        loop of every transport (socket, TCP, stdio). At most MAX_IN_FLIGHT requests of a client run
        at once; its further frames stay unread (in the kernel's buffer: the client's writes block)
        until one finishes. At EOF a socket client's requests are cancelled; with `answer_at_eof`
        (stdio: the parent closed its end after its last request) they are answered first."""
        self.daemon.attach(self)
        try:
            while not self.exit_requested:
                try:
                    body = await codec.read_frame(self.reader, self.daemon.max_frame)
                except codec.FrameError as e:
                    log.warning("closing %s: %s", self.id, e)
                    break
                except (ConnectionError, OSError):
                    break
                if body is None:
                    if self.answer_at_eof:
                        await self.wait_idle()
                    break
                self.handle_body(body)
                if self._backed_up():  # answers given in the read loop's turn wait like a task's would
                    await self._drain()
                while len(self.tasks) >= MAX_IN_FLIGHT and not self.closed:  # backpressure, not memory
                    self._slot_free.clear()
                    await self._slot_free.wait()
        finally:
            await self.close()

    def handle_body(self, body: bytes) -> None:
        try:
            msg = codec.loads(body)
        except codec.JSONDecodeError as e:
            self._error(None, PARSE_ERROR, f"parse error: {e}")
            return
        if not isinstance(msg, dict):
            what = "batches are not supported" if isinstance(msg, list) else "a message must be an object"
            self._error(None, INVALID_REQUEST, f"invalid request: {what}")
            return
        if msg.get("jsonrpc") != "2.0":
            self._error(msg.get("id") if _valid_id(msg.get("id")) else None, INVALID_REQUEST,
                        "invalid request: jsonrpc must be \"2.0\"")
            return
        if "method" in msg:
            self._on_call(msg)
        elif "id" in msg and ("result" in msg or "error" in msg):
            self._on_response(msg)
        else:
            self._error(msg.get("id") if _valid_id(msg.get("id")) else None, INVALID_REQUEST,
                        "invalid request: neither a call nor a response")

    def _on_response(self, msg: dict[str, object]) -> None:
        fut = self.pending.get(msg["id"]) if isinstance(msg["id"], str) else None
        if fut is None or fut.done():
            log.debug("%s: response to unknown request %r", self.id, msg.get("id"))
            return
        err = msg.get("error")
        if err is not None:  # the client answered a server→client request with an error
            fut.set_exception(wire_errors.from_error(err))
        else:
            fut.set_result(msg.get("result"))

    def _on_call(self, msg: dict[str, object]) -> None:
        name = msg["method"]
        is_request = "id" in msg
        rid = msg.get("id")
        if is_request and not _valid_id(rid):
            self._error(None, INVALID_REQUEST, "invalid request: id must be a string or an integer")
            return
        if not isinstance(name, str):  # an invalid request, not a notification: always answered
            self._error(rid, INVALID_REQUEST, "invalid request: method must be a string")
            return
        params = msg.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            if is_request:
                self._error(rid, INVALID_PARAMS, "params must be an object (named parameters)")
            return
        if self.token is not None and not self.initialized and name != "initialize":
            if is_request:
                self._error(rid, SERVER_NOT_INITIALIZED, "initialize with the token first")
            self.exit_requested = True
            return
        if name == "exit":
            self.exit_requested = True
            return
        if name == "$/cancelRequest":
            cid = params.get("id")
            task = self.tasks.get(cid) if _valid_id(cid) else None
            if task is not None:
                coro = task.get_coro()
                if isinstance(coro, types.CoroutineType) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
                    # read in the same burst as its request: cancelled before its first step, the
                    # coroutine never runs (nor its own answer), so it is answered and forgotten here
                    self.tasks.pop(cid, None)
                    self._slot_free.set()
                    self._error(cid, REQUEST_CANCELLED, "request cancelled", {"kind": "request_cancelled"})
                task.cancel()
            return
        if not is_request:
            handler = METHODS.get(name)
            if handler is not None and not self.shutting_down:
                asyncio.get_running_loop().create_task(self._notification(handler, name, params))
            return
        if rid in self.tasks:
            self._error(rid, INVALID_REQUEST, f"request id {rid!r} is already in flight")
            return
        if name == "initialize":
            self._initialize(rid, params)
            return
        if self.shutting_down:
            self._error(rid, INVALID_REQUEST, "the connection is shutting down")
            return
        if name == "shutdown":
            self.shutting_down = True
            handler = _shutdown
        else:
            handler = METHODS.get(name)
            if handler is None:
                self._error(rid, METHOD_NOT_FOUND, f"method not found: {name}")
                return
        now = None if self.tasks else NOW.get(name)
        if now is not None and self._answer_now(now, rid, params, name):
            return
        # no done callback: one loop turn less per request ($/cancelRequest answers a task it cancels
        # before the task's first step itself)
        self.tasks[rid] = asyncio.get_running_loop().create_task(self._request(handler, rid, params, name))

    def _initialize(self, rid: object, params: dict[str, object]) -> None:
        if self.token is not None:
            tok = params.get("token")
            if not isinstance(tok, str) or not hmac.compare_digest(tok.encode(), self.token.encode()):
                self._error(rid, INVALID_PARAMS, "bad or missing token", {"kind": "unauthorized"})
                self.exit_requested = True
                return
        info = params.get("client_info")
        if isinstance(info, dict) and len(codec.dumps(info)) > MAX_CLIENT_INFO:
            info = {"truncated": True}  # kept for daemon/status: a client cannot make it huge
        self.client_info = info if isinstance(info, dict) else {}
        self.initialized = True
        self.send({"jsonrpc": "2.0", "id": rid, "result": {
            "server_info": {"name": "sessiondag", "version": __version__},
            "protocol_version": PROTOCOL_VERSION,
            "client_id": self.id,
            "capabilities": {"methods": sorted(METHODS) + ["initialize", "shutdown"],
                             "notifications": list(NOTIFICATIONS), "cancel_request": True},
        }})

    def _answer_now(self, now: NowHandler, rid: object, params: dict[str, object], name: str) -> bool:
        """Answer a request in this turn by its method's now form (rpc/answer_now.py), with no task:
        True if it did (or left an awaitable to finish it as its task), False if it said LATER."""
        try:
            result = now(RequestContext(self.daemon.service, self, rid), rpc_params.check(name, params))
        except Exception as raised:  # noqa: BLE001 - the request's error, as a handler's
            self.answered_now += 1
            self._failed(rid, raised)
            return True
        if result is LATER:
            return False
        self.answered_now += 1
        if inspect.isawaitable(result):
            pending = result
            self.tasks[rid] = asyncio.get_running_loop().create_task(
                self._request(lambda ctx, p: pending, rid, params, name))
            return True
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})
        return True

    def _failed(self, rid: object, raised: Exception) -> None:
        e = unwrap_group(raised)
        err = error_object(e)
        if err["code"] == INTERNAL_ERROR:
            log.error("handler failed for request %r", rid, exc_info=e)
        self.send({"jsonrpc": "2.0", "id": rid, "error": err})

    async def _request(self, handler: Handler, rid: object, params: dict[str, object], name: str = "") -> None:
        try:
            result = await handler(RequestContext(self.daemon.service, self, rid), rpc_params.check(name, params))
        except asyncio.CancelledError:
            if not self.closed:
                self._error(rid, REQUEST_CANCELLED, "request cancelled", {"kind": "request_cancelled"})
            raise
        except Exception as raised:  # noqa: BLE001 - every handler failure is this request's error
            self._failed(rid, raised)
        else:
            self.send({"jsonrpc": "2.0", "id": rid, "result": result})
        finally:
            self.tasks.pop(rid, None)
            self._slot_free.set()
        await self._drain()

    async def _notification(self, handler: Handler, name: str, params: dict[str, object]) -> None:
        try:
            await handler(RequestContext(self.daemon.service, self, None), rpc_params.check(name, params))
        except Exception:  # noqa: BLE001
            log.debug("notification %s failed", name, exc_info=True)

    # --- teardown ----------------------------------------------------------------------------
    async def wait_idle(self) -> None:
        """Wait for every in-flight request of this connection to finish."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks.values()), return_exceptions=True)
            self._forget_done()

    def _forget_done(self) -> None:
        """Drop the entries of finished tasks: a task cancelled before its first step (by `close`)
        never ran `_request`, whose `finally` forgets a request (there is no done callback)."""
        for rid, t in list(self.tasks.items()):
            if t.done():
                del self.tasks[rid]

    async def close(self, grace: float = 30.0) -> None:
        if self.closed and not self.tasks and not self.pending:
            self.daemon.detach(self)
            return
        self.closed = True
        for t in list(self.tasks.values()):
            t.cancel()
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError(f"client {self.id} disconnected"))
        if self.tasks:
            await asyncio.gather(*list(self.tasks.values()), return_exceptions=True)
            self._forget_done()
        self.daemon.detach(self)
        await self.outbox.flushed(grace)  # a big frame still being written, and what waits behind it
        self.outbox.cut()  # one not written by then (a client that stopped reading): its thread stops now
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001
            pass


async def _shutdown(ctx: RequestContext, params: dict[str, object]) -> None:
    """LSP `shutdown`: this connection takes no more requests; its in-flight ones finish first.

    Open turns are committed when the daemon stops (stdio: right after `exit`), not here: on a shared
    socket one client leaving must not end turns other clients are running."""
    conn = ctx.client
    assert isinstance(conn, Connection)
    others = [t for k, t in conn.tasks.items() if k != ctx.request_id]
    if others:
        await asyncio.gather(*others, return_exceptions=True)
    return None
