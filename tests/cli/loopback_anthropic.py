"""A real Anthropic Messages API server on loopback (SSE streaming), for the native provider's tests.

Replies come from a script like the openai loopback's: {match?, text?, tool_calls?: [{name,
arguments}], usage?: {input_tokens, output_tokens, cache_read_input_tokens?, cache_creation_input_tokens?}, no_usage?: true, repeat?: true}. `failures` is
a list of (status, headers) answered, in order, before any scripted reply (429 / 5xx for retries);
`hang_s` makes the server wait that long before answering (timeouts). Every request is recorded
(path, headers, body)."""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))

from loopback_http import ScriptedServer, send_chunk, send_json, send_not_found, start_chunked  # noqa: E402


class LoopbackAnthropic(ScriptedServer):
    def __init__(self, replies: list[dict[str, Any]] | None = None, *, model: str = "claude-loopback",
                 failures: list[tuple[int, dict[str, str]]] | None = None, hang_s: float = 0.0):
        super().__init__(replies, model)
        self.failures = list(failures or [])
        self.hang_s = hang_s
        self.stop = threading.Event()
        self.serve(self._post)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def _post(self, h, body) -> None:
        with self.lock:
            self.requests.append({"path": h.path, "headers": {k.lower(): v for k, v in h.headers.items()},
                                  "body": body})
            failure = self.failures.pop(0) if self.failures else None
        if self.hang_s and self.stop.wait(self.hang_s):
            return
        if failure is not None:
            status, headers = failure
            return send_json(h, status, {"type": "error", "error": {"type": "overloaded_error",
                                                                    "message": f"status {status}"}}, headers)
        if not h.path.endswith("/v1/messages"):
            return send_not_found(h)
        reply = self.choose(body.get("messages") or [])
        if reply is None:
            return send_json(h, 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "no scripted reply"}})
        self.stream(h, reply)

    def __exit__(self, *exc) -> None:
        self.stop.set()
        super().__exit__(*exc)

    @staticmethod
    def block_text(block: dict[str, Any]) -> str:
        return block.get("text", "") or json.dumps(block.get("content", ""))  # a tool_result's content

    def stream(self, h, reply):
        start_chunked(h)
        out: list[bytes] = []

        def ev(kind: str, data: dict[str, Any]) -> None:
            out.append(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())
        u = reply.get("usage") or {"input_tokens": 13, "output_tokens": 5}
        msg = {"id": "msg_loop", "type": "message", "role": "assistant", "model": self.model, "content": [],
               "stop_reason": None, "stop_sequence": None}
        if not reply.get("no_usage"):
            msg["usage"] = {"input_tokens": u["input_tokens"], "output_tokens": 1,
                            **{k: u[k] for k in ("cache_read_input_tokens", "cache_creation_input_tokens") if k in u}}
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
        send_chunk(h, b"".join(out), True)
        h.close_connection = True
