"""The client's frame reading and decoding of big answers: a body that arrives in any pieces is the
body sent (joined once, not grown in one buffer), a big one is parsed with the cyclic GC paused and
the collector's state is the caller's again afterwards, and a whole branch decodes to the Calls
one by one would give."""

from __future__ import annotations

import gc
import threading

import anyio
import orjson
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from hypothesis import given, settings, strategies as st

from sessiondag_client.wire import codec
from sessiondag_client.wire.types import MANY, Call, calls_of


async def _receive_all(pieces: list[bytes]) -> list[bytes]:
    send, recv = anyio.create_memory_object_stream(len(pieces) + 1)
    async with send:
        for p in pieces:
            await send.send(p)
    buffered, out = BufferedByteReceiveStream(recv), []
    while (body := await codec.receive_frame(buffered)) is not None:
        out.append(body)
    return out


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    at = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(at, at[1:]) if b > a]


@settings(deadline=None, max_examples=60)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4), st.lists(st.integers(0, 10**6), max_size=12),
       st.integers(1, 64))
def test_bodies_in_any_pieces_are_the_bodies_sent(bodies, cuts, piece):
    msgs = [orjson.dumps(b.hex()) for b in bodies]
    data = b"".join(codec.frame(m) for m in msgs)
    old = codec.RECEIVE_PIECE
    codec.RECEIVE_PIECE = piece  # ask the stream for small pieces: bodies span many receives
    try:
        got = anyio.run(_receive_all, _cut(data, cuts))
    finally:
        codec.RECEIVE_PIECE = old
    assert got == msgs and all(type(b) is bytes for b in got)


def test_a_body_bigger_than_a_piece_arrives_whole():
    body = orjson.dumps([{"i": i, "t": "x" * 50} for i in range(60_000)])  # ~4 MB: several pieces
    assert len(body) > 3 * codec.RECEIVE_PIECE
    data = codec.frame(body) + codec.frame(b"[1]")
    got = anyio.run(_receive_all, _cut(data, [7, 1000, len(data) // 3, len(data) // 2 + 5]))
    assert got == [body, b"[1]"]


def test_eof_inside_a_big_body_is_a_frame_error():
    data = codec.frame(b"[" + b"1," * (codec.RECEIVE_PIECE) + b"1]")
    with pytest.raises(codec.FrameError, match="inside a frame body"):
        anyio.run(_receive_all, [data[:len(data) - 10]])


@pytest.mark.parametrize("enabled", [True, False])
def test_a_big_decode_leaves_the_collector_as_the_caller_had_it(enabled):
    body = orjson.dumps({"nodes": [{"k": [i]} for i in range(200_000)]})
    assert len(body) >= codec.BIG_BODY
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert codec.decode(body) == orjson.loads(body)
        assert gc.isenabled() is enabled
        with pytest.raises(orjson.JSONDecodeError):
            codec.decode(body[:-1])
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_pauses_in_many_threads_turn_the_collector_back_on_once_all_are_done():
    assert gc.isenabled()
    inside, release, first_out = threading.Barrier(3), threading.Event(), threading.Event()
    seen = []

    def hold(first: bool):
        with codec.gc_paused():
            inside.wait()
            (release if first else first_out).wait()
        if first:
            seen.append(gc.isenabled())  # the other thread still holds its pause
            first_out.set()

    ts = [threading.Thread(target=hold, args=(k == 0,)) for k in range(2)]
    for t in ts:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    release.set()
    for t in ts:
        t.join()
    assert gc.isenabled() and seen == [False]


def test_a_whole_branch_decodes_to_the_calls_one_by_one_gives():
    wire = [{"id": f"n{i}", "seq": i, "created_at": 1.5, "role": "user", "name": "u", "input": None,
             "output": f"text {i}", "status": "completed", "caller": "ROOT", "predecessor": f"n{i - 1}" if i else None,
             "reads": [], "metadata": {"k": i}} for i in range(MANY + 10)]
    wire[3] = {"role": "llm", "name": "m", "output": "a node with fields left out"}
    want = [Call.from_dict(orjson.loads(orjson.dumps(d))) for d in wire]
    assert gc.isenabled()
    got = calls_of(orjson.loads(orjson.dumps(wire)))
    assert got == want and gc.isenabled()
