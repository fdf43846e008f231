"""The wire codec: LSP framing (`Content-Length` headers) with orjson bodies.

One frame = ASCII headers, a blank line, then exactly Content-Length bytes of UTF-8 JSON. The length
is always taken from the *encoded bytes* (never from a str). A frame that cannot be delimited (no or
bad Content-Length, oversized, truncated headers, EOF inside a body) raises `FrameError`: the
connection that sent it is closed, nothing else is affected. A frame that is delimited but whose body
is not JSON is *not* a frame error: the server answers it with -32700 and keeps reading.

Caps: `MAX_HEADER` for a header block; a body up to `MAX_REQUEST` (64 MiB) is what a server takes from
one client message (the daemon's requests, the ACP agent's lines); a client takes answers up to
`MAX_RESPONSE` (256 MiB: a whole 100k-node branch is one answer).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import anyio
import orjson
from anyio.streams.buffered import BufferedByteReceiveStream

MAX_REQUEST = 64 << 20        # bytes of one message a server reads; bigger frames close the connection
MAX_RESPONSE = 256 << 20      # bytes of one message a client reads
MAX_FRAME = MAX_REQUEST
MAX_HEADER = 8 << 10          # bytes of one header block
RECEIVE_PIECE = 1 << 20       # bytes asked of the stream at a time while a body arrives
BIG_BODY = 1 << 20            # a body at least this long is parsed with the cyclic GC paused (decode)
SEP = b"\r\n\r\n"
_CL = b"content-length"

dumps = orjson.dumps
loads = orjson.loads
JSONDecodeError = orjson.JSONDecodeError

MAX_DEPTH = 200               # nesting a message may use: the daemon's limit for a node field (core/depth.py)
_ENCODER_LIMIT = 254          # orjson's nesting limit (containers)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Does `value` nest more than `limit` levels of arrays/objects? One encode in C, no Python
    recursion (a parsed message can nest up to orjson's parse limit, 1,024 levels, which Python
    code walking it recursively, or the stdlib encoder, would not survive)."""
    if not isinstance(value, (dict, list)):
        return False
    for _ in range(_ENCODER_LIMIT - limit):
        value = [value]
    try:
        dumps(value)
    except orjson.JSONEncodeError as e:
        return "recursion" in str(e).lower()
    return False


class FrameError(ValueError):
    """The byte stream can no longer be split into frames."""


def parse_headers(block: bytes, max_frame: int = MAX_REQUEST) -> int:
    """Content-Length of one header block (without the final blank line)."""
    if len(block) > MAX_HEADER:
        raise FrameError("header block too long")
    length = None
    for line in block.split(b"\r\n"):
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            raise FrameError(f"malformed header line {line[:60]!r}")
        if name.strip().lower() == _CL:
            v = value.strip()
            if not v.isdigit() or len(v) > 12:
                raise FrameError(f"bad Content-Length {v[:20]!r}")
            length = int(v)
    if length is None:
        raise FrameError("frame has no Content-Length")
    if length > max_frame:
        raise FrameError(f"frame of {length} bytes exceeds the {max_frame}-byte cap")
    return length


async def read_frame(reader: asyncio.StreamReader, max_frame: int = MAX_REQUEST) -> bytes | None:
    """The next body from an asyncio stream, or None at a clean EOF (between frames)."""
    try:
        block = await reader.readuntil(SEP)
    except asyncio.IncompleteReadError as e:
        if not e.partial.strip():
            return None
        raise FrameError("connection closed inside a header block") from None
    except asyncio.LimitOverrunError:
        raise FrameError("header block too long") from None
    n = parse_headers(block[:-4], max_frame)
    try:
        return await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        raise FrameError("connection closed inside a frame body") from None


async def receive_frame(buffered: BufferedByteReceiveStream, max_frame: int = MAX_RESPONSE) -> bytes | None:
    """The next body from an anyio `BufferedByteReceiveStream`, or None at a clean EOF."""
    try:
        block = await buffered.receive_until(SEP, MAX_HEADER + 4)
    except anyio.IncompleteRead:
        if not buffered.buffer.strip():
            return None
        raise FrameError("connection closed inside a header block") from None
    except anyio.DelimiterNotFound:
        raise FrameError("header block too long") from None
    n = parse_headers(block, max_frame)
    # the body in pieces joined once (receive_exactly would grow one bytearray, then copy it twice)
    parts: list[bytes] = []
    got = 0
    try:
        while got < n:
            piece = await buffered.receive(min(n - got, RECEIVE_PIECE))
            parts.append(piece)
            got += len(piece)
    except anyio.EndOfStream:
        raise FrameError("connection closed inside a frame body") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


class RawArray:
    """A JSON array whose items are already-encoded JSON values (e.g. nodes' cached encodings).

    A message may hold RawArrays anywhere; `encode` joins their items straight into the frame, so a
    big response is copied once and never re-serialized item by item."""

    __slots__ = ("items",)

    def __init__(self, items: list[bytes]):
        self.items = items


_MARK = b"\x00"  # orjson never writes a raw NUL (control characters are escaped)


def encode(msg: Any) -> bytes:
    """One complete frame for a JSON-RPC message."""
    return b"".join(encode_parts(msg))


def encode_parts(msg: Any) -> list[bytes]:
    """One complete frame for a JSON-RPC message, as pieces to be sent in order: one bytes object,
    or — when the message holds RawArrays — the header, then the pieces around and between their
    items, not joined (the daemon writes a big one to its socket without copying it first)."""
    arrays: list[RawArray] = []

    def splice(o: Any) -> Any:
        if type(o) is RawArray:
            arrays.append(o)
            return orjson.Fragment(_MARK)
        raise TypeError(f"Type is not JSON serializable: {type(o).__name__}")

    body = dumps(msg, default=splice)
    if not arrays:
        return [b"Content-Length: %d\r\n\r\n%b" % (len(body), body)]
    pieces = body.split(_MARK)
    parts = [b"", pieces[0]]
    for arr, after in zip(arrays, pieces[1:]):
        items = arr.items
        if items:
            seq = [b","] * (2 * len(items) + 1)
            seq[0], seq[-1] = b"[", b"]"
            seq[1::2] = items
            parts += seq
        else:
            parts.append(b"[]")
        parts.append(after)
    parts[0] = b"Content-Length: %d\r\n\r\n" % sum(map(len, parts))
    return parts


def decode(body: bytes) -> Any:
    """Parse a body (raises orjson.JSONDecodeError on malformed JSON). A big one (a whole branch)
    is parsed with the cyclic GC paused (`gc_paused`): parsing allocates one container per JSON
    object and creates no cycles, and the collector would otherwise rescan the growing result
    again and again while it is built (about half of the parse's CPU at 100k nodes)."""
    if len(body) < BIG_BODY:
        return loads(body)
    with gc_paused():
        return loads(body)


_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


@contextmanager
def gc_paused(when: bool = True) -> Iterator[None]:
    """Hold the cyclic GC off inside the block; re-entrant and shared by the threads of the process
    (reference-counted: the last one out turns it back on, and only if it was on when the first
    one came in; what the pause built moved to the oldest generation first, not rescanned by the
    next young collections). `when=False` is a no-op. The daemon's own bulk builds use
    core/gc_pause.py, the same rule; this package cannot import the daemon."""
    global _gc_pausers, _gc_was_enabled
    if not when:
        yield
        return
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                if gc.get_freeze_count() == 0:  # nobody keeps objects frozen on purpose
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()


class FrameBuffer:
    """Incremental splitter for byte chunks (synchronous clients, benchmarks, tests)."""

    def __init__(self, max_frame: int = MAX_RESPONSE):
        self.buf = bytearray()
        self.max_frame = max_frame

    def feed(self, data: bytes) -> list[bytes]:
        self.buf += data
        out: list[bytes] = []
        while True:
            i = self.buf.find(SEP)
            if i < 0:
                if len(self.buf) > MAX_HEADER + 4:
                    raise FrameError("header block too long")
                return out
            n = parse_headers(bytes(self.buf[:i]), self.max_frame)
            end = i + 4 + n
            if len(self.buf) < end:
                return out
            out.append(bytes(self.buf[i + 4:end]))
            del self.buf[:end]

