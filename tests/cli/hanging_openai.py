"""The loopback OpenAI server of tests/runtime, with a reply that streams its text and then goes
silent until released (a model mid-answer), for cancellation tests."""

from __future__ import annotations

import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))

from loopback_http import send_chunk, start_chunked  # noqa: E402
from loopback_openai import LoopbackOpenAI  # noqa: E402


class HangingOpenAI(LoopbackOpenAI):
    def __init__(self, text: str):
        super().__init__([{"text": text, "repeat": True}])
        self.release = threading.Event()

    def stream(self, h, reply, body):
        if not reply.get("text"):
            return super().stream(h, reply, body)
        start_chunked(h)
        send_chunk(h, self._chunk({"role": "assistant", "content": ""}) + self._chunk({"content": reply["text"]}),
                   False)
        self.release.wait(120)  # silent mid-stream; the client must stop on its own
        h.close_connection = True

    def __exit__(self, *exc):
        self.release.set()
        super().__exit__(*exc)


__all__ = ["HangingOpenAI", "LoopbackOpenAI", "json"]
