"""Anthropic's Messages API through the official `anthropic` package.

The loop renders this provider's messages in the "anthropic" format (context/messages.py: content
blocks, tool_use / tool_result, the system prompt as leading system items that go to `system`).
Streams the raw events: text deltas go to `on_text`, a tool_use block's JSON input arrives in
`input_json_delta` pieces, input tokens come with `message_start` (our input count adds the
cache reads and writes Anthropic counts apart; the reads are also the cached tokens), output tokens with
`message_delta`. Retries (retry.py), per-request timeout, extra headers and the one-time
no-usage warning work as for the openai provider. Optional extra: `pip install sessiondag[anthropic]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Unpack

import orjson

from ..errors import RunCancelled
from .base import Completion, ProviderError, ToolCall, abort_http, watch_cancel
from .http_base import HttpProvider, HttpSettings

if TYPE_CHECKING:
    from ...context.encoded_messages import Message

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_MAX_TOKENS = 4096
FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop_sequence": "stop"}


def to_anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style function specs (what the loop's tools describe) → Anthropic tool specs."""
    out = []
    for t in tools:
        f = t.get("function", t)
        out.append({"name": f["name"], "description": f.get("description", ""),
                    "input_schema": f.get("parameters") or {"type": "object", "properties": {}}})
    return out


def split_system(messages: list[Message]) -> tuple[str | None, list[Message]]:
    """Every system item (the prompt, injected instructions) → one `system` text; the rest in order."""
    system = [m["content"] if isinstance(m["content"], str) else
              "\n".join(b.get("text", "") for b in m["content"] if isinstance(b, dict))
              for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return ("\n\n".join(system) if system else None), rest


class AnthropicProvider(HttpProvider):
    name = "anthropic"
    wire_format = "anthropic"
    default_model = DEFAULT_MODEL

    def __init__(self, **settings: Unpack[HttpSettings]):
        try:
            import anthropic
        except ImportError:  # pragma: no cover - the extra is installed in our venv
            raise ProviderError("the anthropic provider needs the 'anthropic' package: "
                                "pip install 'sessiondag[anthropic]'")
        super().__init__(**settings)
        self._anthropic = anthropic
        self._client = anthropic.Anthropic(base_url=self.base_url, api_key=self.api_key or "sk-none",
                                           timeout=self.timeout, max_retries=0,
                                           default_headers=self.headers or None)

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None], cancelled: Callable[[], bool]) -> Completion:
        system, msgs = split_system(messages)
        kwargs: dict[str, Any] = {"model": self.model, "messages": msgs, "stream": True,
                                  "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = to_anthropic_tools(tools)
        if self.temperature is not None:  # in the body as is: newer SDKs dropped the keyword
            kwargs["extra_body"] = {"temperature": self.temperature}
        return self._call(lambda text, stop: self._once(kwargs, text, on_text, stop), cancelled,
                          (self._anthropic.APIConnectionError,))

    def _once(self, kwargs: dict[str, Any], text: list[str], on_text: Callable[[str], None],
              cancelled: Callable[[], bool]) -> Completion:
        blocks: dict[int, dict[str, Any]] = {}
        usage_in = usage_out = cached = None
        model = self.model
        finish = None
        stream = self._client.messages.create(**kwargs)
        unwatch = watch_cancel(cancelled, lambda: abort_http(getattr(stream, "response", None)))
        try:
            for ev in stream:
                if cancelled():
                    raise RunCancelled("cancelled while streaming")
                t = ev.type
                if t == "message_start":
                    model = ev.message.model or model
                    u = ev.message.usage
                    if u is not None:  # input_tokens leaves the cache out: ours counts every input token
                        cached = getattr(u, "cache_read_input_tokens", None)
                        written = getattr(u, "cache_creation_input_tokens", None)
                        usage_in = ((u.input_tokens or 0) + (cached if isinstance(cached, int) else 0)
                                    + (written if isinstance(written, int) else 0))
                        cached = cached if isinstance(cached, int) else None
                elif t == "content_block_start":
                    b = ev.content_block
                    blocks[ev.index] = {"type": b.type, "id": getattr(b, "id", None),
                                        "name": getattr(b, "name", ""), "json": []}
                elif t == "content_block_delta":
                    d = ev.delta
                    if d.type == "text_delta" and d.text:
                        text.append(d.text)
                        on_text(d.text)
                    elif d.type == "input_json_delta":
                        blocks.setdefault(ev.index, {"type": "tool_use", "id": None, "name": "", "json": []})[
                            "json"].append(d.partial_json)
                elif t == "message_delta":
                    finish = ev.delta.stop_reason or finish
                    if ev.usage is not None and ev.usage.output_tokens is not None:
                        usage_out = ev.usage.output_tokens
        finally:
            unwatch()
            stream.close()
        if finish is None:
            raise ProviderError("the stream ended without a stop reason (truncated)", partial="".join(text))
        if usage_in is None and usage_out is None:
            self._warn_no_usage()
        calls = []
        for i in sorted(blocks):
            b = blocks[i]
            if b["type"] != "tool_use":
                continue
            raw = "".join(b["json"]) or "{}"
            try:
                args = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise ProviderError(f"tool call {b['name']!r} has invalid JSON input: {raw[:200]!r}",
                                    partial="".join(text)) from None
            calls.append(ToolCall(b["id"] or f"toolu_{i}", b["name"], args if isinstance(args, dict) else {"value": args}))
        return Completion("".join(text), calls, usage_in or 0, usage_out or 0, model, FINISH.get(finish, finish),
                          cached)
