"""The client's socket streams (sessiondag_client/socket_stream.py): Unix and loopback TCP behave
alike on asyncio and trio (data, the peer's EOF, a send after the peer is gone, a closed stream), and
the asyncio race they exist for: anyio's own asyncio Unix stream still resolves its readable-future
twice when the stream is closed in the loop iteration that finds the socket readable — the test of
it fails once an anyio release fixes that, which is the day to drop socket_stream.py's asyncio half."""

import asyncio
import os
import socket

import anyio
import pytest

from sessiondag_client.socket_stream import open_tcp, open_unix

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture(params=["unix", "tcp"])
def kind(request):
    return request.param


class Listener:
    """A plain listening socket (the peer), accepted from the test's own thread."""

    def __init__(self, kind, tmp_path):
        if kind == "unix":
            self.sock = socket.socket(socket.AF_UNIX)
            self.address = str(tmp_path / "s")
            self.sock.bind(self.address)
        else:
            self.sock = socket.socket(socket.AF_INET)
            self.sock.bind(("127.0.0.1", 0))
            self.address = self.sock.getsockname()
        self.sock.listen()
        self.kind = kind

    async def open(self):
        if self.kind == "unix":
            stream, pid = await open_unix(self.address)
            assert pid == os.getpid()   # SO_PEERCRED names the process listening: this one
            return stream
        return await open_tcp(*self.address)

    def accept(self):
        peer, _ = self.sock.accept()
        return peer


async def test_data_eof_broken_and_closed_alike(kind, tmp_path):
    lst = Listener(kind, tmp_path)
    stream = await lst.open()
    peer = lst.accept()
    await stream.send(b"ping")
    assert peer.recv(16) == b"ping"
    peer.sendall(b"pong")
    assert await stream.receive() == b"pong"
    peer.shutdown(socket.SHUT_WR)
    with pytest.raises(anyio.EndOfStream):
        await stream.receive()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")   # close: a reset
    peer.close()
    with pytest.raises(anyio.BrokenResourceError):
        for _ in range(100):   # the first sends may still be buffered before the reset is seen
            await stream.send(b"x" * 65536)
            await anyio.sleep(0.01)
    await stream.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()
    lst.sock.close()


async def _close_while_readable(open_stream, peer_of):
    """Close the stream in the loop iteration whose select finds the peer's data (the reader task
    waiting in receive()); the loop's callback errors, as asyncio reports them."""
    errors = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: errors.append(ctx.get("exception")))
    stream = await open_stream()
    peer = peer_of()

    async def reader():
        try:
            await stream.receive()
        except (anyio.ClosedResourceError, anyio.EndOfStream, anyio.BrokenResourceError):
            pass
    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        for _ in range(3):
            await anyio.sleep(0)   # the reader waits for the socket to be readable
        peer.send(b"x")            # readable at the next select, which runs after this task's
        await anyio.sleep(0)       # next step is queued: that step runs first ...
        await stream.aclose()      # ... and closes the stream before the reader callback runs
    for _ in range(3):
        await anyio.sleep(0)
    peer.close()
    return [e for e in errors if e is not None]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_our_streams_have_no_callback_race(kind, tmp_path, anyio_backend):
    lst = Listener(kind, tmp_path)
    assert await _close_while_readable(lst.open, lst.accept) == []
    lst.sock.close()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_anyio_asyncio_unix_stream_still_has_the_race(tmp_path, anyio_backend):
    """If this fails, anyio fixed its asyncio Unix stream: use anyio.connect_unix / connect_tcp on
    asyncio too and drop TransportStream (socket_stream.py)."""
    lst = Listener("unix", tmp_path)
    errors = await _close_while_readable(lambda: anyio.connect_unix(lst.address), lst.accept)
    assert [type(e) for e in errors] == [asyncio.InvalidStateError], errors
    lst.sock.close()
