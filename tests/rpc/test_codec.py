import asyncio

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondag.rpc import codec

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


async def _read_all(data: bytes, max_frame: int = codec.MAX_FRAME) -> list[bytes]:
    r = asyncio.StreamReader()
    r.feed_data(data)
    r.feed_eof()
    out = []
    while True:
        body = await codec.read_frame(r, max_frame)
        if body is None:
            return out
        out.append(body)


@pytest.mark.slow
@given(st.lists(json_values, min_size=1, max_size=5))
@settings(max_examples=150, deadline=None)
def test_frames_round_trip_with_byte_lengths(msgs):
    data = b"".join(codec.encode(m) for m in msgs)
    bodies = asyncio.run(_read_all(data))
    assert [orjson.loads(b) for b in bodies] == msgs
    buf = codec.FrameBuffer()
    got = []
    for i in range(0, len(data), 7):  # split anywhere, including inside headers and multibyte chars
        got += buf.feed(data[i:i + 7])
    assert [orjson.loads(b) for b in got] == msgs


def test_content_length_counts_encoded_bytes_not_characters():
    f = codec.encode({"s": "héllo ☃ 𝄞"})
    head, _, body = f.partition(b"\r\n\r\n")
    assert int(head.split(b":")[1]) == len(body) > len('{"s":"héllo ☃ 𝄞"}') - 6


@pytest.mark.parametrize("data", [
    b"Content-Length: abc\r\n\r\n{}",
    b"Content-Type: x\r\n\r\n{}",
    b"no colon here\r\n\r\n{}",
    b"Content-Length: 99999999999999\r\n\r\n",
    b"Content-Length: 10\r\n\r\n{}",          # EOF inside the body
    b"Content-Length: 2\r\n",                 # EOF inside the headers
])
def test_broken_frames_raise_frame_error(data):
    with pytest.raises(codec.FrameError):
        asyncio.run(_read_all(data))


def test_oversized_frame_is_refused_before_reading_it():
    with pytest.raises(codec.FrameError, match="exceeds"):
        asyncio.run(_read_all(b"Content-Length: 1001\r\n\r\n" + b" " * 1001, max_frame=1000))


def test_clean_eof_between_frames_is_not_an_error():
    assert asyncio.run(_read_all(codec.encode(1) + b"\r\n")) == [b"1"]


# --- one parser, every binding: the daemon's asyncio reader, the client's anyio reader, byte chunks ---
async def _read_all_anyio(data: bytes, max_frame: int) -> list[bytes]:
    import anyio
    from anyio.streams.buffered import BufferedByteReceiveStream
    send, recv = anyio.create_memory_object_stream(16)
    async with send:
        await send.send(data)
    buffered, out = BufferedByteReceiveStream(recv), []
    while (body := await codec.receive_frame(buffered, max_frame)) is not None:
        out.append(body)
    return out


def _chunks(data: bytes, max_frame: int) -> list[bytes]:
    buf = codec.FrameBuffer(max_frame)
    out = buf.feed(data)
    if buf.buf.strip():
        raise codec.FrameError("a frame cut off at EOF")
    return out


@pytest.mark.parametrize("data", [
    b"Content-Length: abc\r\n\r\n{}", b"Content-Type: x\r\n\r\n{}", b"no colon here\r\n\r\n{}",
    b"Content-Length: 1001\r\n\r\n" + b" " * 1001, b"Content-Length: 10\r\n\r\n{}", b"Content-Length: 2\r\n",
    b"X-Long: " + b"a" * (codec.MAX_HEADER + 10) + b"\r\n\r\n{}",
    codec.encode({"a": 1}) + codec.encode([1, "é"]),
])
def test_every_binding_of_the_one_parser_gives_the_same_verdict(data):
    import anyio
    verdicts = []
    for read in (lambda: asyncio.run(_read_all(data, 1000)), lambda: anyio.run(_read_all_anyio, data, 1000),
                 lambda: _chunks(data, 1000)):
        try:
            verdicts.append([orjson.loads(b) for b in read()])
        except codec.FrameError:
            verdicts.append("FrameError")
    assert verdicts[0] == verdicts[1] == verdicts[2], verdicts


def test_caps_are_the_wire_modules_for_daemon_client_and_acp():
    from sessiondag.acp import transport
    from sessiondag_client import framing
    from sessiondag_client.wire import codec as wire
    assert codec.read_frame is wire.read_frame and codec.MAX_FRAME == wire.MAX_REQUEST
    assert transport.LINE_LIMIT == wire.MAX_REQUEST
    assert framing.FramedStream.__init__.__defaults__ == (wire.MAX_RESPONSE,) and wire.MAX_RESPONSE >= wire.MAX_REQUEST
