"""Any OpenAI-compatible chat-completions endpoint, through the official `openai` package.

Streams (`stream=True`, `stream_options.include_usage`), assembles tool calls from their deltas
(index-keyed: id and name arrive first, the JSON arguments in pieces), and reads usage from the
final chunk, with its cached and reasoning token details when present (a server that sends none gets one warning per provider, and 0 tokens). Retries: see
retry.py; `timeout` is per request; `headers` are sent with every request. A cancel wakes a stream
blocked on a silent server at once. Messages given as EncodedMessages (the runtime's render) are
spliced into the request body as they are encoded (`request_body`), the same bytes the SDK would
write for them decoded. The `openai` package is an optional extra
(`pip install sessiondag[openai]`).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Unpack

import orjson

from ...context.encoded_messages import EncodedMessages, Message
from ..errors import RunCancelled
from .base import Completion, ProviderError, ToolCall, abort_http, watch_cancel
from .http_base import HttpProvider, HttpSettings

DEFAULT_MODEL = "gpt-4o-mini"


# the fields of a chat-completions body in the order the SDK writes them, and its JSON options
_HEAD, _TAIL = ("model", "stream"), ("max_tokens", "stream_options", "temperature", "tools")
_SDK_JSON: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":"), "allow_nan": False}


def request_body(kwargs: dict[str, Any]) -> bytes:
    """The body `chat.completions.create(**kwargs)` sends, byte for byte, with the messages
    (EncodedMessages) spliced in as they are: the other fields encoded as the SDK encodes them
    (json.dumps, compact, not ASCII-escaped), the messages by orjson, which writes every string as
    json.dumps does there (tests/runtime/test_encoded_request.py holds both)."""
    head = json.dumps({k: kwargs[k] for k in _HEAD}, **_SDK_JSON).encode()
    tail = json.dumps({k: kwargs[k] for k in _TAIL if k in kwargs}, **_SDK_JSON).encode()
    pieces = kwargs["messages"].pieces()
    pieces.insert(0, head[:-1] + b',"messages":')
    pieces.append(b"," + tail[1:] if len(tail) > 2 else b"}")
    return b"".join(pieces)


class OpenAICompatProvider(HttpProvider):
    name = "openai"
    wire_format = "openai"
    encoded_messages = True  # complete() takes EncodedMessages too (context/encoded_messages.py)
    default_model = DEFAULT_MODEL

    def __init__(self, **settings: Unpack[HttpSettings]):
        try:
            import openai
        except ImportError:  # pragma: no cover - the extra is installed in our venv
            raise ProviderError("the openai provider needs the 'openai' package: pip install 'sessiondag[openai]'")
        super().__init__(**settings)
        self._openai = openai
        self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "sk-none", timeout=self.timeout,
                                     max_retries=0, default_headers=self.headers or None)

    def complete(self, messages: list[Message] | EncodedMessages, tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None], cancelled: Callable[[], bool],
                 on_reasoning: Callable[[str], None] | None = None) -> Completion:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True,
                                  "stream_options": {"include_usage": True}}
        if tools:
            kwargs["tools"] = tools
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        return self._call(lambda text, stop: self._once(kwargs, text, on_text, stop, on_reasoning), cancelled,
                          (self._openai.APIConnectionError,))

    def _open(self, kwargs: dict[str, Any]) -> Any:
        """The SDK's stream for the request; EncodedMessages go into the body as they are encoded
        (request_body), posted as `chat.completions.create` posts."""
        if not isinstance(kwargs["messages"], EncodedMessages):
            return self._client.chat.completions.create(**kwargs)
        from openai import Stream
        from openai.types.chat import ChatCompletion, ChatCompletionChunk
        return self._client.post("/chat/completions", content=request_body(kwargs), cast_to=ChatCompletion,
                                 options={"security": {"bearer_auth": True}}, stream=True,
                                 stream_cls=Stream[ChatCompletionChunk])

    def _once(self, kwargs: dict[str, Any], text: list[str], on_text: Callable[[str], None],
              cancelled: Callable[[], bool], on_reasoning: Callable[[str], None] | None = None) -> Completion:
        calls: dict[int, dict[str, Any]] = {}
        usage = None
        cached = reasoning = None
        model = self.model
        finish = None
        stream = self._open(kwargs)
        unwatch = watch_cancel(cancelled, lambda: abort_http(getattr(stream, "response", None)))
        try:
            for chunk in stream:
                if cancelled():
                    raise RunCancelled("cancelled while streaming")
                if getattr(chunk, "model", None):
                    model = chunk.model
                if chunk.usage is not None:
                    usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                    details = (getattr(chunk.usage, "prompt_tokens_details", None),
                               getattr(chunk.usage, "completion_tokens_details", None))
                    cached = getattr(details[0], "cached_tokens", None) if details[0] is not None else None
                    reasoning = getattr(details[1], "reasoning_tokens", None) if details[1] is not None else None
                for choice in chunk.choices or ():
                    d = choice.delta
                    # reasoning deltas: `reasoning_content` (DeepSeek, vLLM, llama.cpp), `reasoning` (OpenRouter)
                    thought = (getattr(d, "reasoning_content", None) or getattr(d, "reasoning", None)) \
                        if d is not None else None
                    if isinstance(thought, str) and thought and on_reasoning is not None:
                        on_reasoning(thought)
                    if d is not None and d.content:
                        text.append(d.content)
                        on_text(d.content)
                    for tc in (d.tool_calls or ()) if d is not None else ():
                        slot = calls.setdefault(tc.index, {"id": None, "name": "", "args": []})
                        if tc.id:
                            slot["id"] = tc.id
                        if tc.function is not None:
                            if tc.function.name:
                                slot["name"] += tc.function.name
                            if tc.function.arguments:
                                slot["args"].append(tc.function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        finally:
            unwatch()
            stream.close()
        if finish is None:
            response = getattr(stream, "response", None)
            ctype = str(getattr(response, "headers", {}).get("content-type", "")) if response is not None else ""
            if ctype and "event-stream" not in ctype:
                raise ProviderError(f"{self.base_url or 'the endpoint'} answered a streaming request with a "
                                    f"plain {ctype.split(';')[0]} body instead of server-sent events: it does not "
                                    f"stream (or a proxy buffers it)", partial="".join(text))
            raise ProviderError("the stream ended without a finish reason (truncated)", partial="".join(text))
        if usage is None:
            usage = (0, 0)
            self._warn_no_usage()
        out = []
        for i in sorted(calls):
            slot = calls[i]
            raw = "".join(slot["args"]) or "{}"
            try:
                args = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise ProviderError(f"tool call {slot['name']!r} has invalid JSON arguments: {raw[:200]!r}",
                                    partial="".join(text)) from None
            if not isinstance(args, dict):
                args = {"value": args}
            out.append(ToolCall(slot["id"] or f"call_{i}", slot["name"], args))
        return Completion("".join(text), out, usage[0], usage[1], model, finish,
                          cached if isinstance(cached, int) else None, reasoning if isinstance(reasoning, int) else None)
