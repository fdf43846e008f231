"""A $/cancelRequest that arrives in the same read as its request (what vscode-jsonrpc sends when a token
is cancelled at once) is still answered -32800, and the connection stays usable."""

import socket

import orjson

from sessiondag.rpc.transports import connect_unix


def frame(msg: dict) -> bytes:
    body = orjson.dumps(msg)
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_msg(s: socket.socket, buf: bytearray) -> dict:
    while True:
        head, sep, _ = bytes(buf).partition(b"\r\n\r\n")
        if sep:
            n = int(head.split(b":")[1])
            start = len(head) + 4
            if len(buf) >= start + n:
                msg = orjson.loads(bytes(buf[start:start + n]))
                del buf[:start + n]
                return msg
        chunk = s.recv(65536)
        assert chunk, "connection closed"
        buf += chunk


def test_cancel_in_the_same_burst_is_answered(socket_daemon):
    s = connect_unix(socket_daemon.socket, timeout=30)
    s.settimeout(30)
    buf = bytearray()
    try:
        s.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "daemon/ping", "params": {"delay": 30}})
                  + frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}}))
        r = read_msg(s, buf)
        assert r["id"] == 1 and r["error"]["code"] == -32800 and r["error"]["data"]["kind"] == "request_cancelled"
        s.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "daemon/ping", "params": {}}))  # the id is free again
        assert read_msg(s, buf) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    finally:
        s.close()
