"""A real OpenAI-compatible chat-completions server on loopback, for provider tests.

Speaks the streamed wire format (SSE `data:` chunks: content deltas, tool-call deltas split into
pieces, a usage chunk, `[DONE]`) and also the non-streamed JSON form. Replies come from a script
(same shape as the scripted provider's: text, tool_calls, usage, match, repeat, plus `break: true`
to drop the connection mid-stream). Every request body is recorded in `server.requests`.
"""

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
        return "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


class LoopbackOpenAI:
    def __init__(self, replies: list[dict[str, Any]] | None = None, model: str = "loopback-model"):
        self.replies = list(replies or [])
        self.used: set[int] = set()
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.n = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer.lock:
                    outer.requests.append({"path": self.path, "body": body,
                                           "auth": self.headers.get("Authorization")})
                if not self.path.endswith("/chat/completions"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                reply = outer.choose(body.get("messages") or [])
                if reply is None:
                    data = json.dumps({"error": {"message": "no scripted reply", "type": "invalid_request_error"}}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if body.get("stream"):
                    outer.stream(self, reply, body)
                else:
                    outer.plain(self, reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
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
                self.n += 1
                return r
        return None

    def _chunk(self, delta=None, finish=None, usage=None, choices=True):
        self.n += 1
        d: dict[str, Any] = {"id": "chatcmpl-loop", "object": "chat.completion.chunk", "created": 1,
                             "model": self.model,
                             "choices": ([{"index": 0, "delta": delta or {}, "finish_reason": finish}]
                                         if choices else [])}
        if usage is not None:
            d["usage"] = usage
        return ("data: " + json.dumps(d) + "\n\n").encode()

    def stream(self, h, reply, body):
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Connection", "close")
        h.end_headers()

        def send(data: bytes, last: bool) -> None:
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n" + (b"0\r\n\r\n" if last else b""))
            h.wfile.flush()

        out = [self._chunk({"role": "assistant", "content": ""})]
        text = reply.get("text") or ""
        for k in range(0, len(text), 7):
            out.append(self._chunk({"content": text[k:k + 7]}))
        if reply.get("break"):  # drop the connection mid-body (no terminating chunk)
            send(b"".join(out), False)
            h.close_connection = True
            return
        for i, tc in enumerate(reply.get("tool_calls") or ()):
            args = json.dumps(tc.get("arguments") or {})
            cut = max(1, len(args) // 2)
            out.append(self._chunk({"tool_calls": [{"index": i, "id": tc.get("id") or f"call_lb_{i}", "type": "function",
                                                    "function": {"name": tc["name"], "arguments": ""}}]}))
            out.append(self._chunk({"tool_calls": [{"index": i, "function": {"arguments": args[:cut]}}]}))
            out.append(self._chunk({"tool_calls": [{"index": i, "function": {"arguments": args[cut:]}}]}))
        finish = "tool_calls" if reply.get("tool_calls") else "stop"
        out.append(self._chunk({}, finish=finish))
        u = reply.get("usage") or {"prompt_tokens": 11, "completion_tokens": 7}
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append(self._chunk(usage={"prompt_tokens": u.get("prompt_tokens", 11),
                                          "completion_tokens": u.get("completion_tokens", 7),
                                          "total_tokens": u.get("prompt_tokens", 11) + u.get("completion_tokens", 7)},
                                   choices=False))
        out.append(b"data: [DONE]\n\n")
        send(b"".join(out), True)
        h.close_connection = True

    def plain(self, h, reply):
        msg: dict[str, Any] = {"role": "assistant", "content": reply.get("text") or ""}
        if reply.get("tool_calls"):
            msg["tool_calls"] = [{"id": tc.get("id") or f"call_lb_{i}", "type": "function",
                                  "function": {"name": tc["name"], "arguments": json.dumps(tc.get("arguments") or {})}}
                                 for i, tc in enumerate(reply["tool_calls"])]
        data = json.dumps({"id": "chatcmpl-loop", "object": "chat.completion", "created": 1, "model": self.model,
                           "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def texts(self) -> list[str]:
        """Every message text of every request, flattened (to look for docstrings)."""
        out = []
        for r in self.requests:
            for m in r["body"].get("messages") or ():
                c = m.get("content")
                out.append(c if isinstance(c, str) else json.dumps(c))
        return out


if __name__ == "__main__":  # standalone: `python loopback_openai.py SCRIPT.json` prints the base URL
    import sys
    replies = json.load(open(sys.argv[1])) if len(sys.argv) > 1 else []
    with LoopbackOpenAI(replies) as srv:
        print(srv.base_url, flush=True)
        threading.Event().wait()
