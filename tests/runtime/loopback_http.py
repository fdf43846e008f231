"""What the loopback provider servers share (loopback_openai.py here, tests/cli/loopback_anthropic.py):
a threaded HTTP/1.1 server on 127.0.0.1 (port 0), a script of replies picked by `match` / `repeat`,
every request recorded, JSON and chunked answers."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


def send_json(h: BaseHTTPRequestHandler, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(obj).encode()
    h.send_response(status)
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def send_not_found(h: BaseHTTPRequestHandler) -> None:
    h.send_response(404)
    h.send_header("Content-Length", "0")
    h.end_headers()


def start_chunked(h: BaseHTTPRequestHandler, content_type: str = "text/event-stream") -> None:
    h.send_response(200)
    h.send_header("Content-Type", content_type)
    h.send_header("Cache-Control", "no-cache")
    h.send_header("Transfer-Encoding", "chunked")
    h.send_header("Connection", "close")
    h.end_headers()


def send_chunk(h: BaseHTTPRequestHandler, data: bytes, last: bool) -> None:
    h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n" + (b"0\r\n\r\n" if last else b""))
    h.wfile.flush()


class ScriptedServer:
    """`replies`: dicts with an optional `match` (a substring of the last message's text) and
    `repeat` (may answer more than once); the rest is the subclass's wire format. Subclasses call
    `serve(post)` with their POST handler."""

    def __init__(self, replies: list[dict[str, Any]] | None, model: str):
        self.replies = list(replies or [])
        self.used: set[int] = set()
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def serve(self, post: Callable[[BaseHTTPRequestHandler, Any], None]) -> None:
        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # keep test output clean
                pass

            def do_POST(self):
                self.raw_body = self.rfile.read(int(self.headers.get("Content-Length", "0")))  # as it came
                post(self, json.loads(self.raw_body or b"{}"))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def last_text(self, messages: list[dict[str, Any]]) -> str:
        """The text of the last message (what `match` looks in)."""
        if not messages:
            return ""
        c = messages[-1].get("content")
        if isinstance(c, list):
            return "\n".join(self.block_text(b) for b in c if isinstance(b, dict))
        return c or ""

    @staticmethod
    def block_text(block: dict[str, Any]) -> str:
        return block.get("text", "")

    def choose(self, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        last = self.last_text(messages)
        with self.lock:
            for i, r in enumerate(self.replies):
                if i in self.used and not r.get("repeat"):
                    continue
                if r.get("match") is not None and r["match"] not in last:
                    continue
                self.used.add(i)
                self.chosen(r)
                return r
        return None

    def chosen(self, reply: dict[str, Any]) -> None:
        """Called under the lock when `reply` is picked."""
