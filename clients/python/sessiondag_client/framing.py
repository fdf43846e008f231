"""Client-side framing over an anyio byte stream (Content-Length + orjson)."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
from anyio.streams.buffered import BufferedByteReceiveStream

MAX_FRAME = 256 << 20


class FramedStream:
    def __init__(self, send: Any, receive: Any):
        self.send_stream = send
        self.buffered = BufferedByteReceiveStream(receive)
        self._send_lock = anyio.Lock()

    async def send(self, msg: Any) -> None:
        body = orjson.dumps(msg)
        data = b"Content-Length: %d\r\n\r\n%b" % (len(body), body)
        async with self._send_lock:
            await self.send_stream.send(data)

    async def send_raw(self, data: bytes) -> None:
        async with self._send_lock:
            await self.send_stream.send(data)

    async def receive(self) -> Any:
        """The next message, or raises anyio.EndOfStream / IncompleteRead at EOF."""
        header = await self.buffered.receive_until(b"\r\n\r\n", 8192)
        length = None
        for line in header.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None or length > MAX_FRAME:
            raise ValueError(f"bad frame header {header[:80]!r}")
        return orjson.loads(await self.buffered.receive_exactly(length))
