"""The ACP stdio transport: newline-delimited JSON-RPC on the process's stdin/stdout.

The SDK's own NDJSON transport drops a line that is not JSON without a word; a well-behaved agent
answers it (-32700, id null) and keeps serving, and answers JSON that is not a request object with
-32600, and params the SDK would silently coerce (a string protocolVersion) with -32602. stdout carries the protocol only: fd 1 is re-pointed at stderr once the pipe is taken, so a
stray print can never corrupt the stream. Logs go to stderr."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Mapping
from io import FileIO
from typing import Protocol

from sessiondag_client.wire.codec import MAX_DEPTH, JSONDecodeError, decode, too_deep
from sessiondag_client.wire.codec import MAX_REQUEST as LINE_LIMIT  # the wire's cap on one client message

log = logging.getLogger("sessiondag.acp")


class ByteWriter(Protocol):
    """Where the protocol's bytes go: an asyncio.StreamWriter, or a `_FileWriter` (stdout a file)."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class NdjsonStdio:
    """An `acp._transport.Transport` (send / receive / close of decoded messages)."""

    def __init__(self, reader: asyncio.StreamReader, writer: ByteWriter):
        self._reader = reader
        self._writer = writer
        self._lock = asyncio.Lock()

    async def send(self, message: Mapping[str, object]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._lock:
            self._writer.write(data)
            await self._writer.drain()

    async def _error(self, code: int, message: str, rid: object = None, data: object = None) -> None:
        error = {"code": code, "message": message} if data is None else {"code": code, "message": message, "data": data}
        await self.send({"jsonrpc": "2.0", "id": rid, "error": error})

    async def receive(self) -> dict[str, object] | None:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as e:
                line = e.partial
                if not line.strip():
                    return None
            except asyncio.LimitOverrunError:
                await self._skip_line()
                await self._error(-32600, f"message larger than {LINE_LIMIT} bytes")
                continue
            line = line.strip()
            if not line:
                continue
            try:
                msg = decode(line)  # the daemon's parser: nesting past its limit is a parse error too
            except JSONDecodeError as e:
                log.warning("acp: a line that is not JSON: %s", e)
                await self._error(-32700, f"Parse error: {e}")
                continue
            if too_deep(msg):  # the SDK's models and the stdlib encoder recurse per level
                log.warning("acp: a line nested more than %d levels", MAX_DEPTH)
                await self._error(-32700, f"Parse error: nested more than {MAX_DEPTH} levels",
                                  data={"max_depth": MAX_DEPTH})
                continue
            bad = _invalid(msg)
            if bad:
                rid = msg.get("id") if isinstance(msg, dict) and isinstance(msg.get("id"), (str, int)) else None
                await self._error(-32600, f"Invalid request: {bad}", rid)
                continue
            bad = _bad_params(msg)
            if bad:
                await self._error(-32602, f"Invalid params: {bad}", msg.get("id"))
                continue
            request: dict[str, object] = msg   # _invalid: an object
            return request

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as e:
                await self._reader.readexactly(e.consumed)
            except asyncio.IncompleteReadError:
                return

    async def close(self) -> None:
        try:
            self._writer.close()
        except Exception:  # noqa: BLE001
            pass


def _invalid(msg: object) -> str | None:
    if not isinstance(msg, dict):
        return "a message is a JSON object (batches are not part of ACP)"
    if msg.get("jsonrpc") != "2.0":
        return "jsonrpc must be '2.0'"
    if "method" in msg and not isinstance(msg["method"], str):
        return "method must be a string"
    if "id" in msg and msg["id"] is not None and (isinstance(msg["id"], bool) or not isinstance(msg["id"], (str, int))):
        return "id must be a string or an integer"
    if "method" not in msg and "id" not in msg:
        return "neither a request, a notification nor a response"
    if "params" in msg and msg["params"] is not None and not isinstance(msg["params"], (dict, list)):
        return "params must be an object"
    return None


def _bad_params(msg: Mapping[str, object]) -> str | None:
    """Params the SDK would silently coerce: `initialize` with a protocolVersion that is not an
    integer (the SDK maps it to 1) is refused with -32602."""
    if msg.get("method") == "initialize" and "id" in msg:
        params = msg.get("params")
        v = params.get("protocolVersion") if isinstance(params, dict) else None
        if isinstance(v, bool) or not isinstance(v, int):
            return f"protocolVersion must be an integer (got {json.dumps(v)})"
    return None


class _FileWriter:
    """A writer for an fd that asyncio cannot watch (a regular file): blocking writes in a thread."""

    def __init__(self, f: FileIO):
        self._f = f
        self._buf = b""

    def write(self, data: bytes) -> None:
        self._buf += data

    async def drain(self) -> None:
        data, self._buf = self._buf, b""
        await asyncio.to_thread(self._f.write, data)

    def close(self) -> None:
        self._f.close()


def _feed_from_thread(loop: asyncio.AbstractEventLoop, f: FileIO, reader: asyncio.StreamReader) -> None:
    import threading

    def run() -> None:
        try:
            while chunk := f.read(65536):
                loop.call_soon_threadsafe(reader.feed_data, chunk)
        finally:
            loop.call_soon_threadsafe(reader.feed_eof)
    threading.Thread(target=run, daemon=True, name="acp-stdin").start()


async def stdio_transport() -> NdjsonStdio:
    """Take stdin/stdout for the protocol and point fd 1 at stderr."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    fin = os.fdopen(in_fd, "rb", 0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), fin)
    except ValueError:   # a regular file: read it in a thread
        _feed_from_thread(loop, fin, reader)
    fout = os.fdopen(out_fd, "wb", 0)
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, fout)
        writer: ByteWriter = asyncio.StreamWriter(transport, protocol, None, loop)
    except ValueError:
        writer = _FileWriter(fout)
    return NdjsonStdio(reader, writer)
