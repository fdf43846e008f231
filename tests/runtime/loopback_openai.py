"""A real OpenAI-compatible chat-completions server on loopback, for provider tests.

Speaks the streamed wire format (SSE `data:` chunks: content deltas, tool-call deltas split into
pieces, a usage chunk, `[DONE]`) and also the non-streamed JSON form. Replies come from a script
(same shape as the scripted provider's: text, reasoning (streamed as `reasoning_content` deltas),
tool_calls, usage, match, repeat, plus `break: true` to drop the connection mid-stream). Every request body is recorded in `server.requests` (parsed, and `raw`: its bytes).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from loopback_http import ScriptedServer, send_chunk, send_json, send_not_found, start_chunked


class LoopbackOpenAI(ScriptedServer):
    def __init__(self, replies: list[dict[str, Any]] | None = None, model: str = "loopback-model"):
        super().__init__(replies, model)
        self.n = 0
        self.serve(self._post)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def _post(self, h, body) -> None:
        with self.lock:
            self.requests.append({"path": h.path, "body": body, "auth": h.headers.get("Authorization"),
                                  "raw": h.raw_body, "headers": dict(h.headers.items())})
        if not h.path.endswith("/chat/completions"):
            return send_not_found(h)
        reply = self.choose(body.get("messages") or [])
        if reply is None:
            return send_json(h, 400, {"error": {"message": "no scripted reply", "type": "invalid_request_error"}})
        if body.get("stream"):
            self.stream(h, reply, body)
        else:
            self.plain(h, reply)

    def chosen(self, reply: dict[str, Any]) -> None:
        self.n += 1

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
        start_chunked(h)

        def send(data: bytes, last: bool) -> None:
            send_chunk(h, data, last)

        out = [self._chunk({"role": "assistant", "content": ""})]
        thought = reply.get("reasoning") or ""   # as DeepSeek / vLLM stream it: reasoning_content deltas
        for k in range(0, len(thought), 7):
            out.append(self._chunk({"reasoning_content": thought[k:k + 7]}))
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
            usage = {"prompt_tokens": u.get("prompt_tokens", 11), "completion_tokens": u.get("completion_tokens", 7),
                     "total_tokens": u.get("prompt_tokens", 11) + u.get("completion_tokens", 7)}
            for k in ("prompt_tokens_details", "completion_tokens_details"):  # cached / reasoning tokens
                if k in u:
                    usage[k] = u[k]
            out.append(self._chunk(usage=usage, choices=False))
        out.append(b"data: [DONE]\n\n")
        send(b"".join(out), True)
        h.close_connection = True

    def plain(self, h, reply):
        msg: dict[str, Any] = {"role": "assistant", "content": reply.get("text") or ""}
        if reply.get("tool_calls"):
            msg["tool_calls"] = [{"id": tc.get("id") or f"call_lb_{i}", "type": "function",
                                  "function": {"name": tc["name"], "arguments": json.dumps(tc.get("arguments") or {})}}
                                 for i, tc in enumerate(reply["tool_calls"])]
        send_json(h, 200, {"id": "chatcmpl-loop", "object": "chat.completion", "created": 1, "model": self.model,
                           "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})

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
