"""The client's JSON-RPC connection: requests and their answers, server→client requests, notifications.

`Connection` owns the framed stream, the reader task and the table of pending requests; every wait
and send is bounded by the deadlines of deadlines.py. `AsyncClient` (client.py) adds one method per
RPC method on top.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Self, cast

import anyio
import anyio.abc
import anyio.lowlevel

from .background import Background
from .deadlines import DEFAULT_TIMEOUT, PROBE, DaemonNotResponding, answer_due, send_within, wait_answer
from .framing import FramedStream
from .wire import codec
from .branch_decode import answer_id
from .wire import protocol as wp
from .wire.dispatch import RequestHandler, TypedDispatch
from .wire.errors import INTERNAL_ERROR, METHOD_NOT_FOUND, ConnectionClosedError, error_object, from_error


class _Slot:
    """One request waiting for its answer. The reader `answer`s it once (a result or an error); the
    caller waits on an anyio Event (trio) or, on asyncio, on a bare future per wait (`renew`), which
    the reader resolves directly: no event, no cancel scope in between (deadlines.answer_due)."""

    __slots__ = ("method", "decode", "result", "error", "answered", "event", "fut", "loop")

    def __init__(self, method: str, decode: Callable[[bytes], Any] | None, loop: asyncio.AbstractEventLoop | None):
        self.method, self.decode, self.loop = method, decode, loop
        self.result: Any = None
        self.error: BaseException | None = None
        self.answered = False
        self.event = anyio.Event() if loop is None else None
        self.fut: asyncio.Future[Any] | None = None

    def answer(self, result: Any = None, error: BaseException | None = None) -> None:
        if self.answered:
            return
        self.result, self.error, self.answered = result, error, True
        if self.event is not None:
            self.event.set()
        elif self.fut is not None and not self.fut.done():
            self.fut.set_result(None)

    def renew(self) -> asyncio.Future[Any] | None:
        """A fresh future for the reader to resolve; None once the answer is in."""
        if self.answered:
            return None
        assert self.loop is not None
        self.fut = self.loop.create_future()
        return self.fut


class Connection(TypedDispatch):
    """The overloads of `on_request` and `next_notification` (one per server→client request and per
    notification of rpc_schema/) are generated: wire/dispatch.py."""

    def __init__(self, stream: FramedStream, closer: Callable[[], Awaitable[None]], *,
                 timeout: float | None = DEFAULT_TIMEOUT, peer_pid: int | None = None):
        self.timeout = timeout      # seconds for the handshake and each answer (deadlines.py); None: no limit
        self.peer_pid = peer_pid    # the daemon's pid, if the transport tells (named by DaemonNotResponding)
        self._stream = stream
        self._closer = closer
        self._ids = itertools.count(1)
        self._pending: dict[int, _Slot] = {}
        self._loop: asyncio.AbstractEventLoop | None = None   # asyncio's loop (None on trio): calls' fast path
        self._handlers: dict[str, RequestHandler] = {}
        self._notes_send, self._notes_recv = anyio.create_memory_object_stream[wp.ServerNotification](math.inf)
        self._background: Background | None = None   # the reader and the server requests' handlers
        self._handlers_tg: anyio.abc.TaskGroup | None = None
        self._closed = False
        self._ended = False          # the reader is done: no answer will come (a new call fails at once)
        self.server_info: dict[str, Any] = {}
        self.process: anyio.abc.Process | None = None   # the daemon's process, when this client spawned it (stdio)
        # observer(method, raw message): called for every response and notification (tracing, tests)
        self.observer: Callable[[str, dict[str, Any]], None] | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    async def _start(self, *, token: str | None = None, client_name: str = "sessiondag_client") -> Self:
        # a free-standing task (background.py): the client may be opened and closed from
        # different tasks (the sync wrapper runs each call as its own task)
        native = anyio.lowlevel.current_token().native_token
        if isinstance(native, asyncio.AbstractEventLoop):
            self._loop = native
        self._background = Background(self._serve, "sessiondag_client reader")
        self._background.start()
        params: dict[str, Any] = {"client_info": {"name": client_name, "pid": os.getpid()}}
        if token is not None:
            params["token"] = token
        try:
            self.server_info = await self._call("initialize", params, probe=False)
        except DaemonNotResponding:
            with anyio.CancelScope(shield=True):
                await self.aclose()
            raise
        return self

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            try:
                with anyio.fail_after(5):
                    await self._stream.send({"jsonrpc": "2.0", "method": "exit"})
            except Exception:  # noqa: BLE001
                pass
            await self._closer()
            if self._background is not None:
                self._background.cancel()
                await self._background.wait()
        self._fail_pending()

    def _fail_pending(self) -> None:
        self._ended = True
        for slot in list(self._pending.values()):
            slot.answer(error=ConnectionClosedError("connection to the daemon closed"))
        self._notes_send.close()

    async def _serve(self) -> None:
        """The reader, with the handlers of server→client requests in a task group beside it;
        the connection's end cancels the handlers still running (their answers have nowhere to go)."""
        async with anyio.create_task_group() as tg:
            self._handlers_tg = tg
            await self._reader()
            tg.cancel_scope.cancel()

    async def _reader(self) -> None:
        try:
            while True:
                body = await self._stream.receive_body()
                if self._typed_answer(body):
                    continue
                msg = codec.decode(body)
                if not isinstance(msg, dict):
                    continue
                if "method" in msg:
                    if "id" in msg:
                        assert self._handlers_tg is not None
                        self._handlers_tg.start_soon(self._answer, msg)
                    else:
                        if self.observer is not None:
                            self.observer(msg["method"], msg)
                        # as the daemon sent it: its notifications are the schema's (tests/rpc/test_schema*)
                        await self._notes_send.send(cast(wp.ServerNotification, msg))
                    continue
                slot = self._pending.get(msg.get("id"))  # type: ignore[arg-type]  # any id; unknown: None
                if slot is None:
                    continue
                if self.observer is not None:
                    self.observer(slot.method, msg)
                if "error" in msg:
                    slot.answer(error=from_error(msg["error"] if isinstance(msg["error"], dict) else {}))
                else:
                    slot.answer(msg.get("result"))
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError,
                OSError, ValueError):
            pass
        finally:
            self._fail_pending()

    def _typed_answer(self, body: bytes) -> bool:
        """A big answer to a request that brought its own decoder (`call(decode=...)`: get_branch)
        is decoded by it straight to the result; False leaves the frame to the generic path (not
        such an answer, an observer watching the raw messages, or the decoder declined it)."""
        rid = answer_id(body) if self.observer is None else None
        slot = None if rid is None else self._pending.get(rid)
        decode = None if slot is None else slot.decode
        result = None if decode is None else decode(body)
        if result is None:
            return False
        assert slot is not None
        slot.answer(result)
        return True

    async def _answer(self, msg: dict[str, Any]) -> None:
        fn = self._handlers.get(msg["method"])
        if fn is None:
            reply = {"jsonrpc": "2.0", "id": msg["id"],
                     "error": error_object(METHOD_NOT_FOUND, f"client has no handler for {msg['method']}")}
        else:
            try:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": await fn(msg.get("params") or {})}
            except Exception as e:  # noqa: BLE001
                reply = {"jsonrpc": "2.0", "id": msg["id"], "error": error_object(INTERNAL_ERROR, str(e))}
        try:
            await self._stream.send(reply)
        except Exception:  # noqa: BLE001
            pass

    def _on_request(self, method: str, handler: RequestHandler) -> None:
        self._handlers[method] = handler

    # --- calls -------------------------------------------------------------------------------
    async def call(self, method: str, params: Mapping[str, Any] | None = None, *,
                   decode: Callable[[bytes], Any] | None = None) -> Any:
        """Send a request and wait for its result; cancelling the caller sends $/cancelRequest.
        DaemonNotResponding if the daemon answers neither it nor a liveness probe in time.
        `decode(body)`, if given, may turn a big answer's whole frame into the result itself (None:
        it declines, and the result is the parsed JSON as for any call)."""
        return await self._call(method, params, probe=True, decode=decode)

    async def _wait_answer(self, slot: _Slot, method: str, probe: bool) -> None:
        alive = self._alive if probe else None
        if slot.event is not None:
            await wait_answer(slot.event, self.timeout, alive, self.peer_pid, method)
        else:
            await answer_due(slot.renew, self.timeout, alive, self.peer_pid, method)

    async def _alive(self) -> bool:
        """Does the daemon answer a ping within the timeout (while another request takes long)?"""
        try:
            await self._call(PROBE, {}, probe=False)
            return True
        except DaemonNotResponding:
            return False

    async def _send(self, msg: dict[str, Any], method: str) -> None:
        """Send one message: written at once when the stream can take it without waiting (no
        deadline needed then), else within the timeout (deadlines.send_within)."""
        data = codec.frame(codec.dumps(msg))
        if not self._stream.send_nowait(data):
            await send_within(self._stream.send_raw(data), self.timeout, self._closer, self.peer_pid, method)

    async def _call(self, method: str, params: Mapping[str, Any] | None, *, probe: bool,
                    decode: Callable[[bytes], Any] | None = None) -> Any:
        if self._closed:
            raise ConnectionClosedError("client is closed")
        if self._ended:  # a write may still "succeed" on a socket the daemon closed: nothing would answer
            raise ConnectionClosedError("connection to the daemon closed")
        rid = next(self._ids)
        slot = _Slot(method, decode, self._loop)
        self._pending[rid] = slot
        try:
            await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}, method)
            try:
                await self._wait_answer(slot, method, probe)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    try:
                        await self._stream.send({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                                 "params": {"id": rid}})
                    except Exception:  # noqa: BLE001
                        pass
                raise
        finally:
            self._pending.pop(rid, None)
        if slot.error is not None:
            raise slot.error
        return slot.result

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        await self._stream.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def notifications(self) -> AsyncIterator[wp.ServerNotification]:
        """Every notification the daemon sends (`{"jsonrpc", "method", "params"}`), in order; the union
        of wp.ServerNotification, which `if msg["method"] == "session/did_change":` narrows."""
        async for msg in self._notes_recv:
            yield msg

    def pending_notifications(self) -> list[wp.ServerNotification]:
        """The notifications received but not yet consumed, without waiting (e.g. the updates a
        turn sent before its answer arrived)."""
        out: list[wp.ServerNotification] = []
        while True:
            try:
                out.append(self._notes_recv.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return out

    @property
    def connected(self) -> bool:
        """False once the client was closed or its connection to the daemon ended."""
        return not self._closed and self._background is not None and self._background.running

    async def _next_notification(self, method: str | None, timeout: float) -> wp.ServerNotification:
        with anyio.fail_after(timeout):
            while True:
                msg = await self._notes_recv.receive()
                if method is None or msg.get("method") == method:
                    return msg
