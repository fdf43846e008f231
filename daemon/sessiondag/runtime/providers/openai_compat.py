"""Any OpenAI-compatible chat-completions endpoint, through the official `openai` package.

Streams (`stream=True`, `stream_options.include_usage`), assembles tool calls from their deltas
(index-keyed: id and name arrive first, the JSON arguments in pieces), and reads usage from the
final chunk (a server that sends none gets one warning per provider, and 0 tokens). Retries: see
retry.py; `timeout` is per request; `headers` are sent with every request. A cancel wakes a stream
blocked on a silent server at once. The `openai` package is an optional extra
(`pip install sessiondag[openai]`).
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import orjson

from ..errors import RunCancelled
from .base import Completion, ProviderError, ToolCall, abort_http, request_metadata, watch_cancel
from .retry import call_with_retries

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_RETRIES = 3


class OpenAICompatProvider:
    name = "openai"
    wire_format = "openai"

    def __init__(self, base_url: str | None = None, api_key: str | None = None, model: str | None = None,
                 timeout: float = 120.0, max_retries: int = DEFAULT_RETRIES, temperature: float | None = None,
                 max_tokens: int | None = None, headers: dict[str, str] | None = None):
        try:
            import openai
        except ImportError:  # pragma: no cover - the extra is installed in our venv
            raise ProviderError("the openai provider needs the 'openai' package: pip install 'sessiondag[openai]'")
        self.base_url = base_url
        self.api_key = api_key
        self.model = model or DEFAULT_MODEL
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.headers = dict(headers or {})
        self._openai = openai
        self._warned_usage = False
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "sk-none", timeout=timeout,
                                     max_retries=0, default_headers=self.headers or None)

    def config(self) -> dict[str, Any]:
        return {"provider": "openai", "base_url": self.base_url, "api_key": self.api_key,
                "model": self.model, "timeout": self.timeout, "max_retries": self.max_retries,
                "temperature": self.temperature, "max_tokens": self.max_tokens, "headers": self.headers}

    def request_metadata(self) -> dict[str, Any]:
        """Generation settings recorded on the llm node (OpenTelemetry gen_ai.request.* names)."""
        return request_metadata(self)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None], cancelled: Callable[[], bool]) -> Completion:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True,
                                  "stream_options": {"include_usage": True}}
        if tools:
            kwargs["tools"] = tools
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        text: list[str] = []
        try:
            return call_with_retries(lambda: self._once(kwargs, text, on_text, cancelled),
                                     max_retries=self.max_retries, cancelled=cancelled, streamed=lambda: bool(text),
                                     connection_errors=(self._openai.APIConnectionError,))
        except (RunCancelled, ProviderError):
            raise
        except Exception as e:  # OpenAIError, or transport errors surfacing from the stream iterator
            if cancelled():  # the watch closed the stream under the reader
                raise RunCancelled("cancelled while streaming") from e
            raise ProviderError(f"{type(e).__name__}: {e}", partial="".join(text)) from e

    def _once(self, kwargs: dict[str, Any], text: list[str], on_text: Callable[[str], None],
              cancelled: Callable[[], bool]) -> Completion:
        calls: dict[int, dict[str, Any]] = {}
        usage = None
        model = self.model
        finish = None
        stream = self._client.chat.completions.create(**kwargs)
        unwatch = watch_cancel(cancelled, lambda: abort_http(getattr(stream, "response", None)))
        try:
            for chunk in stream:
                if cancelled():
                    raise RunCancelled("cancelled while streaming")
                if getattr(chunk, "model", None):
                    model = chunk.model
                if chunk.usage is not None:
                    usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                for choice in chunk.choices or ():
                    d = choice.delta
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
        return Completion("".join(text), out, usage[0], usage[1], model, finish)

    def _warn_no_usage(self) -> None:
        if not self._warned_usage:
            self._warned_usage = True
            print(f"sessiondag: warning: {self.base_url or 'the openai endpoint'} sent no token usage; "
                  f"usage is recorded as 0 for its calls", file=sys.stderr)
