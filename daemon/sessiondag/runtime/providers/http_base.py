"""What the network providers (openai, anthropic) share: their settings, retries around one streamed
call, the mapping of SDK failures to ProviderError / RunCancelled, the one-time no-usage warning."""

from __future__ import annotations

import sys
from typing import Any, Callable

from ..errors import RunCancelled
from .base import Completion, ProviderError, request_metadata
from .retry import call_with_retries

DEFAULT_RETRIES = 3


class HttpProvider:
    name = ""
    wire_format = "openai"
    default_model = ""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, model: str | None = None,
                 timeout: float = 120.0, max_retries: int = DEFAULT_RETRIES, temperature: float | None = None,
                 max_tokens: int | None = None, headers: dict[str, str] | None = None):
        self.base_url = base_url
        self.api_key = api_key
        self.model = model or self.default_model
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.headers = dict(headers or {})
        self._warned_usage = False

    def config(self) -> dict[str, Any]:
        return {"provider": self.name, "base_url": self.base_url, "api_key": self.api_key, "model": self.model,
                "timeout": self.timeout, "max_retries": self.max_retries, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "headers": self.headers}

    def request_metadata(self) -> dict[str, Any]:
        """Generation settings recorded on the llm node (OpenTelemetry gen_ai.request.* names)."""
        return request_metadata(self)

    def _call(self, once: Callable[[list[str]], Completion], cancelled: Callable[[], bool],
              connection_errors: tuple[type, ...]) -> Completion:
        """`once(text)` with retries (only while `text`, what was streamed, is empty); failures left
        over become ProviderError (with the partial text), or RunCancelled after a cancel."""
        text: list[str] = []
        try:
            return call_with_retries(lambda: once(text), max_retries=self.max_retries, cancelled=cancelled,
                                     streamed=lambda: bool(text), connection_errors=connection_errors)
        except (RunCancelled, ProviderError):
            raise
        except Exception as e:  # SDK errors, or transport errors surfacing from the stream iterator
            if cancelled():  # the cancel watch shut the stream down under the reader
                raise RunCancelled("cancelled while streaming") from e
            raise ProviderError(f"{type(e).__name__}: {e}", partial="".join(text)) from e

    def _warn_no_usage(self) -> None:
        if not self._warned_usage:
            self._warned_usage = True
            print(f"sessiondag: warning: {self.base_url or f'the {self.name} endpoint'} sent no token usage; "
                  f"usage is recorded as 0 for its calls", file=sys.stderr)
