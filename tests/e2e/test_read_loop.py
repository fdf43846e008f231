"""Every transport has the same read loop (issue 19 item 16): a client with MAX_IN_FLIGHT requests
running has its next frames left unread until one finishes — over stdio too (cli/serve.py's copy of
the loop had dropped that). Real `sessiondag serve --stdio` and `--socket` processes; the test
sends MAX_IN_FLIGHT slow pings, then a quick one, and looks at the order of the answers: with
backpressure the quick ping is read only once a slow one finished, so it is answered after it."""

import os
import socket
import subprocess
import threading

import orjson
import pytest

from e2e_support import SERVE
from sessiondag.rpc.connection import MAX_IN_FLIGHT

DELAY = 5  # seconds a slow ping takes: far longer than reading MAX_IN_FLIGHT frames


def frame(msg: dict) -> bytes:
    body = orjson.dumps(msg)
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def answers(read, n: int) -> list:
    """The ids of the first `n` answers, in the order they arrived."""
    buf, out = b"", []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            chunk = read()
            assert chunk, f"the daemon closed the stream after {len(out)} answers"
            buf += chunk
        head, _, buf = buf.partition(b"\r\n\r\n")
        size = int(head.split(b":")[1])
        while len(buf) < size:
            chunk = read()
            assert chunk
            buf += chunk
        msg, buf = orjson.loads(buf[:size]), buf[size:]
        if "id" in msg:
            out.append(msg["id"])
    return out


def burst() -> bytes:
    init = frame({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {}})
    slow = b"".join(frame({"jsonrpc": "2.0", "id": i, "method": "daemon/ping", "params": {"delay": DELAY}})
                    for i in range(MAX_IN_FLIGHT))
    return init + slow + frame({"jsonrpc": "2.0", "id": "quick", "method": "daemon/ping", "params": {}})


def check_order(ids: list) -> None:
    assert ids[0] == "init"
    # the quick ping waited for a slot: at least one slow ping was answered before it
    assert ids.index("quick") > 1, "the quick ping was read past MAX_IN_FLIGHT running requests"


def test_stdio_has_backpressure(tmp_path):
    p = subprocess.Popen(SERVE + ["--stdio", "--state-dir", str(tmp_path / "state")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        data = burst()
        t = threading.Thread(target=lambda: (p.stdin.write(data), p.stdin.flush()), daemon=True)
        t.start()  # the write blocks while the daemon reads no further: not this thread's problem
        check_order(answers(lambda: os.read(p.stdout.fileno(), 1 << 16), MAX_IN_FLIGHT + 2))
        t.join(60)
    finally:
        p.stdin.close()
        p.wait(60)


def test_socket_has_backpressure(socket_daemon):
    s = socket.socket(socket.AF_UNIX)
    s.connect(socket_daemon.socket)
    try:
        t = threading.Thread(target=s.sendall, args=(burst(),), daemon=True)
        t.start()
        check_order(answers(lambda: s.recv(1 << 16), MAX_IN_FLIGHT + 2))
        t.join(60)
    finally:
        s.close()
