"""The daemon's wire codec: the one shared with the Python client (`sessiondag_client.wire.codec`):
LSP framing with orjson bodies, `FrameError`, the frame caps, `RawArray` splicing for big answers."""

from sessiondag_client.wire.codec import (MAX_FRAME, MAX_HEADER, MAX_REQUEST, MAX_RESPONSE, FrameBuffer,  # noqa: F401
                                          FrameError, JSONDecodeError, RawArray, decode, dumps, encode, encode_parts,
                                          frame, loads, parse_headers, read_frame, receive_frame)

__all__ = ["MAX_FRAME", "MAX_HEADER", "MAX_REQUEST", "MAX_RESPONSE", "FrameBuffer", "FrameError", "JSONDecodeError",
           "RawArray", "decode", "dumps", "encode", "encode_parts", "frame", "loads", "parse_headers", "read_frame",
           "receive_frame"]
