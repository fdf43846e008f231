"""The provider contract shared by every model backend."""

from __future__ import annotations

import inspect
import socket
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ...core.errors import SessionDagError

if TYPE_CHECKING:
    from ...context.encoded_messages import Message


class ProviderError(SessionDagError):
    """The model call failed (transport, protocol, script). `partial` is any text already streamed."""

    code = "provider_error"

    def __init__(self, message: str, *, partial: str = ""):
        super().__init__(message)
        self.partial = partial

    def data(self) -> dict[str, object]:
        return {"partial": self.partial}


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    finish_reason: str = "stop"
    cached_tokens: int | None = None     # of input_tokens, read from the prompt cache (None: not reported)
    reasoning_tokens: int | None = None  # of output_tokens, spent reasoning (None: not reported)


class Provider(Protocol):
    name: str
    model: str

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None], cancelled: Callable[[], bool]) -> Completion:
        """One model call. Calls `on_text(delta)` per streamed text delta and raises
        `RunCancelled` promptly once `cancelled()` is true. A provider whose model streams its
        reasoning takes `on_reasoning` too (keyword, optional: `streams_reasoning`) and calls it
        per reasoning delta."""

    def config(self) -> dict[str, object]:
        """JSON-able settings from which `make_provider` rebuilds an equivalent provider."""


def watch_cancel(cancelled: Callable[[], bool], close: Callable[[], None], tick: float = 0.05) -> Callable[[], None]:
    """Call `close()` (from a helper thread) as soon as `cancelled()` turns true, so a stream blocked
    on a silent server stops at once instead of at the next chunk. Returns the function that ends
    the watch (call it when the stream is done)."""
    done = threading.Event()

    def run() -> None:
        while not done.wait(tick):
            if cancelled():
                try:
                    close()
                except Exception:  # noqa: BLE001 - the reader sees the closed stream either way
                    pass
                return
    threading.Thread(target=run, name="sessiondag-cancel-watch", daemon=True).start()
    return done.set


class Closable(Protocol):
    def close(self) -> None: ...


def abort_http(response: Closable | None) -> None:
    """Wake a thread blocked reading `response` (an httpx.Response): shut its socket down (closing a
    socket from another thread does not interrupt a blocked recv), then close the response."""
    stream = getattr(response, "extensions", {}).get("network_stream") if response is not None else None
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    if response is not None:
        response.close()


def request_metadata(provider: object) -> dict[str, object]:
    """The generation settings a provider sends, as llm-node metadata (unset ones are left out)."""
    out: dict[str, object] = {}
    for attr, key in (("temperature", "gen_ai.request.temperature"), ("max_tokens", "gen_ai.request.max_tokens")):
        v = getattr(provider, attr, None)
        if v is not None:
            out[key] = v
    return out


def complete_of(provider: Provider) -> Callable[..., Completion]:
    """`provider.complete` as its callers call it: its messages are a list or, for a provider with
    `encoded_messages`, an EncodedMessages as well, and it takes `on_reasoning` where
    streams_reasoning says so, which the Provider protocol cannot say (calls.py checks both)."""
    return provider.complete


def streams_reasoning(provider: Provider) -> bool:
    """True when the provider's complete() takes `on_reasoning` (older providers do not)."""
    try:
        return "on_reasoning" in inspect.signature(provider.complete).parameters
    except (TypeError, ValueError):
        return False
