"""What the network providers (openai, anthropic) share: their settings, retries around one streamed
call, the mapping of SDK failures to ProviderError / RunCancelled, the one-time no-usage warning.

Two clocks bound a call: `timeout` (seconds without a byte, the SDK's read timeout) and `deadline`
(seconds for the whole call, retries included). A server that keeps the stream alive with comments
(`: keep-alive`) resets the first forever; the second then aborts the stream like a cancel does
(base.watch_cancel) and the call fails with a ProviderError saying so, the partial text kept."""

from __future__ import annotations

import sys
import time
from typing import Callable, TypedDict

from ..errors import RunCancelled
from .base import Completion, ProviderError, request_metadata
from .retry import call_with_retries

DEFAULT_RETRIES = 3
DEFAULT_DEADLINE = 600.0  # seconds for one call, retries included (the setting `deadline` of a profile)


class HttpSettings(TypedDict, total=False):
    """HttpProvider's settings (a profile's, docs/settings.md), which the openai and anthropic
    providers take as keywords and `config()` gives back."""

    base_url: str | None
    api_key: str | None
    model: str | None
    timeout: float
    max_retries: int
    temperature: float | None
    max_tokens: int | None
    headers: dict[str, str] | None
    deadline: float | None


class HttpProvider:
    name = ""
    wire_format = "openai"
    default_model = ""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, model: str | None = None,
                 timeout: float = 120.0, max_retries: int = DEFAULT_RETRIES, temperature: float | None = None,
                 max_tokens: int | None = None, headers: dict[str, str] | None = None,
                 deadline: float | None = DEFAULT_DEADLINE):
        self.base_url = base_url
        self.deadline = deadline
        self.api_key = api_key
        self.model = model or self.default_model
        self.timeout = timeout
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.headers = dict(headers or {})
        self._warned_usage = False

    def config(self) -> dict[str, object]:
        return {"provider": self.name, "base_url": self.base_url, "api_key": self.api_key, "model": self.model,
                "timeout": self.timeout, "max_retries": self.max_retries, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "headers": self.headers, "deadline": self.deadline}

    def request_metadata(self) -> dict[str, object]:
        """Generation settings recorded on the llm node (OpenTelemetry gen_ai.request.* names)."""
        return request_metadata(self)

    def _call(self, once: Callable[[list[str], Callable[[], bool]], Completion], cancelled: Callable[[], bool],
              connection_errors: tuple[type, ...]) -> Completion:
        """`once(text, stop)` with retries (only while `text`, what was streamed, is empty); `stop()`
        is true once the call is cancelled or past its deadline (the stream is then aborted). Failures
        left over become ProviderError (with the partial text), or RunCancelled after a cancel."""
        text: list[str] = []
        end = time.monotonic() + self.deadline if self.deadline else None

        def expired() -> bool:
            return end is not None and time.monotonic() >= end

        def stop() -> bool:
            return cancelled() or expired()
        try:
            return call_with_retries(lambda: once(text, stop), max_retries=self.max_retries, cancelled=stop,
                                     streamed=lambda: bool(text), connection_errors=connection_errors)
        except ProviderError as e:
            if expired() and not cancelled():  # e.g. "truncated": the deadline aborted the stream
                raise ProviderError(self._past_deadline(), partial="".join(text)) from e
            raise
        except Exception as e:  # RunCancelled, SDK errors, or transport errors from the stream iterator
            if cancelled():  # the cancel watch shut the stream down under the reader
                if isinstance(e, RunCancelled):
                    raise
                raise RunCancelled("cancelled while streaming") from e
            if expired():
                raise ProviderError(self._past_deadline(), partial="".join(text)) from e
            if isinstance(e, RunCancelled):
                raise
            raise ProviderError(f"{type(e).__name__}: {e}", partial="".join(text)) from e

    def _past_deadline(self) -> str:
        return f"no complete answer within the call's deadline of {self.deadline:g} s (the setting `deadline`)"

    def _warn_no_usage(self) -> None:
        if not self._warned_usage:
            self._warned_usage = True
            print(f"sessiondag: warning: {self.base_url or f'the {self.name} endpoint'} sent no token usage; "
                  f"usage is recorded as 0 for its calls", file=sys.stderr)
