"""The client's message stream over an anyio byte stream (the wire codec's framing, orjson bodies)."""

from __future__ import annotations

from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from .wire import codec


class FramedStream:
    def __init__(self, send: Any, receive: Any, max_frame: int = codec.MAX_RESPONSE):
        self.send_stream = send
        self.buffered = BufferedByteReceiveStream(receive)
        self.max_frame = max_frame
        self._send_lock = anyio.Lock()

    async def send(self, msg: Any) -> None:
        data = codec.frame(codec.dumps(msg))
        async with self._send_lock:
            await self.send_stream.send(data)

    def send_nowait(self, data: bytes) -> bool:
        """Write one whole frame now if the stream can take it without waiting (an asyncio socket
        stream with room in its buffer, no send in progress); False: nothing written, `send_raw` it."""
        nowait = getattr(self.send_stream, "send_nowait", None)
        return nowait is not None and not self._send_lock.locked() and bool(nowait(data))

    async def send_raw(self, data: bytes) -> None:
        async with self._send_lock:
            await self.send_stream.send(data)

    async def receive(self) -> Any:
        """The next message; anyio.EndOfStream at a clean EOF, codec.FrameError (a ValueError) on a
        broken frame or an EOF inside one."""
        return codec.decode(await self.receive_body())

    async def receive_body(self) -> bytes:
        """The next frame's body, not parsed (errors as `receive`)."""
        body = await codec.receive_frame(self.buffered, self.max_frame)
        if body is None:
            raise anyio.EndOfStream
        return body
