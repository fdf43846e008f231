"""A real Anthropic Messages API server on loopback (SSE streaming), for the native provider's tests.

Replies come from a script like the openai loopback's: {match?, text?, tool_calls?: [{name,
arguments}], usage?: {input_tokens, output_tokens}, no_usage?: true, repeat?: true}. `failures` is
a list of (status, headers) answered, in order, before any scripted reply (429 / 5xx for retries);
`hang_s` makes the server wait that long before answering (timeouts). Every request is recorded
(path, headers, body)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _last_text(messages: list[dict[str, Any]]) -> str:
    if not messages:
        return ""
    c = messages[-1].get("content")
    if isinstance(c, list):
        return "\n".join(b.get("text", "") or json.dumps(b.get("content", "")) for b in c if isinstance(b, dict))
    return c or ""


class LoopbackAnthropic:
    def __init__(self, replies: list[dict[str, Any]] | None = None, *, model: str = "claude-loopback",
                 failures: list[tuple[int, dict[str, str]]] | None = None, hang_s: float = 0.0):
        self.replies = list(replies or [])
        self.used: set[int] = set()
        self.model = model
        self.failures = list(failures or [])
        self.hang_s = hang_s
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                           "body": body})
                    failure = outer.failures.pop(0) if outer.failures else None
                if outer.hang_s and outer.stop.wait(outer.hang_s):
                    return
                if failure is not None:
                    status, headers = failure
                    data = json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                                  "message": f"status {status}"}}).encode()
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if not self.path.endswith("/v1/messages"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                reply = outer.choose(body.get("messages") or [])
                if reply is None:
                    data = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                                  "message": "no scripted reply"}}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                outer.stream(self, reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackAnthropic":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def choose(self, messages):
        last = _last_text(messages)
        with self.lock:
            for i, r in enumerate(self.replies):
                if i in self.used and not r.get("repeat"):
                    continue
                if r.get("match") is not None and r["match"] not in last:
                    continue
                self.used.add(i)
                return r
        return None

    def stream(self, h, reply):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Connection", "close")
        h.end_headers()
        out: list[bytes] = []

        def ev(kind: str, data: dict[str, Any]) -> None:
            out.append(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())
        u = reply.get("usage") or {"input_tokens": 13, "output_tokens": 5}
        msg = {"id": "msg_loop", "type": "message", "role": "assistant", "model": self.model, "content": [],
               "stop_reason": None, "stop_sequence": None}
        if not reply.get("no_usage"):
            msg["usage"] = {"input_tokens": u["input_tokens"], "output_tokens": 1}
        ev("message_start", {"message": msg})
        index = 0
        text = reply.get("text") or ""
        if text:
            ev("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            for k in range(0, len(text), 5):
                ev("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": text[k:k + 5]}})
            ev("content_block_stop", {"index": index})
            index += 1
        for i, tc in enumerate(reply.get("tool_calls") or ()):
            args = json.dumps(tc.get("arguments") or {})
            ev("content_block_start", {"index": index, "content_block": {
                "type": "tool_use", "id": tc.get("id") or f"toolu_loop_{i}", "name": tc["name"], "input": {}}})
            cut = max(1, len(args) // 2)
            for piece in (args[:cut], args[cut:]):
                ev("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})
            ev("content_block_stop", {"index": index})
            index += 1
        stop = "tool_use" if reply.get("tool_calls") else "end_turn"
        delta: dict[str, Any] = {"delta": {"stop_reason": stop, "stop_sequence": None}}
        delta["usage"] = {"output_tokens": u["output_tokens"]} if not reply.get("no_usage") else {}
        ev("message_delta", delta)
        ev("message_stop", {})
        data = b"".join(out)
        h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
        h.wfile.flush()
        h.close_connection = True
