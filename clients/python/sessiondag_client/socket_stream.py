"""The client's socket byte streams, Unix and loopback TCP alike: anyio's socket streams on trio; on
asyncio, asyncio's transports (`asyncio.open_unix_connection` / `open_connection`) behind anyio's
stream interface and errors — one stream class for both, so the two transports buffer, fail and
close the same way on either backend.

Why not `anyio.connect_unix` on asyncio: there its stream waits for a readable socket with a future
that the event loop's reader callback resolves (`add_reader(sock, fut.set_result, None)`). When the
peer's data is already queued as that callback and the stream is closed (or the reading task
cancelled) in the same loop iteration, the callback then resolves a future that is already done:
an `InvalidStateError` "exception in callback", which anyio's test runner raises in the test that
closed the client. anyio 4.16 (the newest release) still has it: tests/e2e/test_socket_streams.py
reproduces it and fails once a release fixes it, the day to drop this module's asyncio half.
anyio's asyncio TCP stream is transport-based and has no such window; it is not used either, so
that TCP and Unix are one stream. Trio's sockets wait in the kernel's readiness (no callback), so
trio takes anyio's streams as they are.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.abc import ByteStream

LIMIT = 1 << 20  # bytes buffered from the socket before asyncio pauses reading it


class TransportStream(ByteStream):
    """An asyncio stream pair behind anyio's ByteStream (its errors: EndOfStream, ClosedResourceError,
    BrokenResourceError)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader = reader
        self._writer = writer
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            data = await self._reader.read(max_bytes)
        except OSError as e:
            raise (anyio.ClosedResourceError() if self._closed else anyio.BrokenResourceError()) from e
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            self._writer.write(item)
            await self._writer.drain()
        except OSError as e:  # the daemon went away (ConnectionResetError, BrokenPipeError)
            raise anyio.BrokenResourceError from e

    def send_nowait(self, item: bytes) -> bool:
        """Hand `item` to the transport without waiting, if that needs no wait: False (nothing sent)
        when the transport's buffer is over its high-water mark or it is closing (then `send`, which
        waits or raises, is the way)."""
        if self._closed:
            raise anyio.ClosedResourceError
        t = self._writer.transport
        if t.is_closing() or t.get_write_buffer_size() >= t.get_write_buffer_limits()[1]:
            return False
        self._writer.write(item)
        return True

    async def send_eof(self) -> None:
        self._writer.write_eof()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except OSError:
            pass

    @property
    def extra_attributes(self) -> Any:
        return {}

    @property
    def raw_socket(self) -> socket.socket | None:
        sock: socket.socket | None = self._writer.get_extra_info("socket")
        return sock


def peer_pid(sock: socket.socket | None) -> int | None:
    """The pid of the process at the other end of a Unix socket (SO_PEERCRED), None if the kernel
    cannot tell."""
    if sock is None:
        return None
    try:
        pid: int = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    except OSError:
        return None
    return pid or None


def _on_asyncio() -> bool:
    return isinstance(anyio.lowlevel.current_token().native_token, asyncio.AbstractEventLoop)


async def open_unix(path: str) -> tuple[anyio.abc.ByteStream, int | None]:
    """A stream connected to the socket at `path`, and the pid of the process serving it."""
    if _on_asyncio():
        reader, writer = await asyncio.open_unix_connection(path, limit=LIMIT)
        s = TransportStream(reader, writer)
        return s, peer_pid(s.raw_socket)
    stream = await anyio.connect_unix(path)
    return stream, peer_pid(stream.extra(anyio.abc.SocketAttribute.raw_socket))


async def open_tcp(host: str, port: int) -> anyio.abc.ByteStream:
    """A stream connected to `host:port` (the daemon listens on loopback only)."""
    if _on_asyncio():
        reader, writer = await asyncio.open_connection(host, port, limit=LIMIT)
        return TransportStream(reader, writer)
    return await anyio.connect_tcp(host, port)
