"""A real OpenAI-compatible chat-completions server on loopback that streams the first part of its
answer and then holds the response open until the test releases it: while it holds, the model call
is under way (its node `running`) with part of its text streamed."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class HeldModel:
    def __init__(self, first: list[str], rest: list[str], gap: float = 0.0):
        """Streams `first`, holds until `release` is set, streams `rest`; `gap` seconds between pieces.
        `sent`: (time.time() once each piece was flushed, the answer's length so far)."""
        self.first, self.rest, self.gap = first, rest, gap
        self.release = threading.Event()
        self.holding = threading.Event()
        self.sent: list[tuple[float, int]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the base class's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if not self.path.endswith("/chat/completions") or not body.get("stream"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                outer.chunk(self, {"role": "assistant", "content": ""})
                outer.sent.clear()
                for piece in outer.first:
                    outer.piece(self, piece)
                outer.holding.set()
                outer.release.wait(120)
                for piece in outer.rest:
                    outer.piece(self, piece)
                outer.chunk(self, {}, finish="stop")
                outer.send(self, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "held",
                                  "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                                           "total_tokens": 15}})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def piece(self, h: BaseHTTPRequestHandler, text: str) -> None:
        if self.gap:
            time.sleep(self.gap)
        self.chunk(h, {"content": text})
        self.sent.append((time.time(), (self.sent[-1][1] if self.sent else 0) + len(text)))

    def chunk(self, h: BaseHTTPRequestHandler, delta: dict[str, Any], finish: str | None = None) -> None:
        self.send(h, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "held",
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    @staticmethod
    def send(h: BaseHTTPRequestHandler, obj: dict[str, Any]) -> None:
        h.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
        h.wfile.flush()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
