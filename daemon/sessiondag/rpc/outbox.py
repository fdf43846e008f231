"""The frames going out to one client, in order, and the fast path for a very big one.

A frame comes as parts (codec.encode_parts): one bytes object, or — for a result that splices
cached node encodings (codec.RawArray, e.g. a whole 100k-node get_branch) — the header plus the
pieces. Joining those pieces and then handing the result to asyncio's transport copies the frame
twice (the join, then the transport's buffer); on this kind of machine a 100 MB copy costs
0.1–0.3 s. So a frame of at least BULK_BYTES on a socket, when nothing else is buffered for the
client, is written by a worker thread straight from its pieces with `sendmsg` (scatter-gather:
the kernel's copy is the only one), on a dup of the socket's descriptor. Frames sent meanwhile wait
in order behind it. Everything else goes to the transport as before.

A client that stops reading: the thread waits in POLL steps; after STALL seconds without progress
(or once the connection is closed, or cut: a daemon stopping gives it SHUTDOWN_GRACE, rpc/daemon.py)
it gives up and the connection is aborted, as a client over the backlog limit is. Pipes (stdio) always take the ordinary path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

log = logging.getLogger(__name__)

BULK_BYTES = 4 << 20      # frames at least this big (and made of pieces) take the sendmsg path
IOV = 512                 # pieces per sendmsg call (below IOV_MAX = 1024)
POLL = 0.5                # seconds a blocked send waits before it looks at `closed` again
STALL = 120.0             # seconds without progress before a client counts as gone

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sessiondag-bulk")
        return _pool


def send_pieces(fd: int, pieces: list[bytes], stop: threading.Event) -> None:
    """Write every byte of `pieces`, in order, to the socket `fd` (non-blocking; a dup is used, so
    the transport may close its own descriptor meanwhile). Raises OSError / TimeoutError."""
    s = socket.socket(fileno=os.dup(fd))
    try:
        s.settimeout(POLL)  # keeps the (shared) descriptor non-blocking; waits in poll()
        i, n, off = 0, len(pieces), 0
        last = time.monotonic()
        while i < n:
            batch: list[bytes | memoryview] = list(pieces[i:i + IOV])
            if off:
                batch[0] = memoryview(batch[0])[off:]
            try:
                sent = s.sendmsg(batch)
            except TimeoutError:
                if stop.is_set() or time.monotonic() - last > STALL:
                    raise TimeoutError("the client stopped reading") from None
                continue
            last = time.monotonic()
            if sent == sum(map(len, batch)):  # the whole batch (often: small pieces): no walk over them
                i, off = i + len(batch), 0
                sent = 0
            while sent:  # advance over what went out
                left = len(pieces[i]) - off
                if sent >= left:
                    sent -= left
                    i, off = i + 1, 0
                else:
                    off += sent
                    sent = 0
            while i < n and not pieces[i]:
                i += 1
    finally:
        s.close()


class Writes(Protocol):
    """The connection's stream writer (an asyncio one: rpc/connection.py): what the outbox writes with."""

    def write(self, data: bytes | memoryview) -> None: ...


class Outbox:
    def __init__(self, writer: Writes):
        self.writer = writer
        self._queue: deque[list[bytes]] = deque()  # frames waiting behind a bulk write
        self._queued = 0                           # their bytes
        self._bulk: asyncio.Future[None] | None = None
        self._stop = threading.Event()
        self.closed = False

    def _fd(self) -> int | None:
        t = getattr(self.writer, "transport", None)
        sock = t.get_extra_info("socket") if t is not None else None
        if t is None or sock is None or t.get_write_buffer_size():
            return None
        try:
            fd: int = sock.fileno()
            return fd
        except (OSError, ValueError):
            return None

    def write(self, parts: list[bytes]) -> None:
        """Send one frame given as parts (see the module doc)."""
        if self._bulk is not None:
            self._queue.append(parts)
            self._queued += sum(map(len, parts))
            return
        if len(parts) > 1:
            size = sum(map(len, parts))
            fd = self._fd() if size >= BULK_BYTES else None
            if fd is not None:
                loop = asyncio.get_running_loop()
                self._bulk = loop.run_in_executor(_executor(), send_pieces, fd, parts, self._stop)
                self._bulk.add_done_callback(self._bulk_done)
                return
            data = b"".join(parts)
        else:
            data = parts[0]
        # a big frame as a view: the transport buffers the unsent tail without slicing a copy first
        self.writer.write(memoryview(data) if len(data) > 1 << 16 else data)

    def _bulk_done(self, fut: asyncio.Future[None]) -> None:
        self._bulk = None
        exc = None if fut.cancelled() else fut.exception()
        if exc is not None or fut.cancelled():
            if not self.closed:
                log.warning("dropping a client: a big frame could not be sent (%s)", exc)
            self.abort()
            return
        while self._queue and self._bulk is None and not self.closed:
            parts = self._queue.popleft()
            self._queued -= sum(map(len, parts))
            self.write(parts)

    def backlog(self) -> int:
        """Bytes accepted for this client and not yet handed to the kernel (the bulk frame in
        flight is not counted: it holds no copy)."""
        t = getattr(self.writer, "transport", None)
        return self._queued + (t.get_write_buffer_size() if t is not None else 0)

    async def flushed(self, timeout: float = 30.0) -> None:
        """Wait until a bulk write in flight and the frames behind it are with the transport."""
        deadline = time.monotonic() + timeout
        while self._bulk is not None and time.monotonic() < deadline:
            await asyncio.wait({self._bulk}, timeout=max(0.0, deadline - time.monotonic()))

    def cut(self) -> None:
        """Give up a bulk write still in flight (its thread stops within POLL; the connection is
        aborted) and what waits behind it; nothing if none is."""
        if self._bulk is not None:
            self.abort()

    def abort(self) -> None:
        self.closed = True
        self._stop.set()
        self._queue.clear()
        self._queued = 0
        t = getattr(self.writer, "transport", None)
        if t is not None:
            t.abort()
