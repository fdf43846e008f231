"""Retrying a model call: 429 / 408 / 409 / 5xx answers and connection errors (timeouts included) are
tried again with exponential backoff and jitter, honouring the server's Retry-After (or
retry-after-ms) up to a bound — but only while nothing has been streamed to the caller yet (a
retry after partial text would show the text twice). The SDKs' own retries are off: theirs honour
any Retry-After, unbounded."""

from __future__ import annotations

import contextvars
import email.utils
import random
import threading
import time
from typing import Callable, Mapping, TypeVar

from ..errors import RunCancelled

T = TypeVar("T")

RETRY_STATUS = (408, 409, 429)
BASE_DELAY = 0.5
MAX_DELAY = 8.0
MAX_RETRY_AFTER = 30.0

# who hears about each retry before its wait: fn(attempt, delay, reason); the runtime sets it around
# a model call (calls.py) so the CLI, the chat and editors show "retrying in 1.2s: HTTP 500 …"
on_retry: contextvars.ContextVar[Callable[[int, float, str], None] | None] = contextvars.ContextVar(
    "sessiondag_on_retry", default=None)


def reason_of(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    text = " ".join(str(exc).split())[:160]
    return f"HTTP {status}: {text}" if isinstance(status, int) else f"{type(exc).__name__}: {text}"


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asks us to wait (retry-after-ms, retry-after as seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        when = email.utils.parsedate_to_datetime(ra) if ra else None
        return max(0.0, when.timestamp() - time.time()) if when is not None else None


def classify(exc: BaseException, connection_errors: tuple[type, ...]) -> tuple[bool, float | None]:
    """(retryable, server-requested delay) for an SDK exception."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        ok = status in RETRY_STATUS or status >= 500
        response = getattr(exc, "response", None)
        return ok, retry_after(getattr(response, "headers", None)) if ok else None
    return isinstance(exc, connection_errors), None


def backoff(attempt: int, requested: float | None) -> float:
    if requested is not None:
        return min(requested, MAX_RETRY_AFTER)
    growth: float = 2 ** attempt  # int ** int is typed Any (a negative exponent gives a float)
    return min(BASE_DELAY * growth, MAX_DELAY) * (1 - 0.25 * random.random())


def call_with_retries(once: Callable[[], T], *, max_retries: int, connection_errors: tuple[type, ...],
                      cancelled: Callable[[], bool], streamed: Callable[[], bool]) -> T:
    """`once()` until it succeeds, fails for good, or `max_retries` retries are spent."""
    attempt = 0
    while True:
        try:
            return once()
        except RunCancelled:
            raise
        except Exception as e:  # noqa: BLE001 - classified below; anything else propagates as is
            ok, requested = classify(e, connection_errors)
            if not ok or attempt >= max_retries or streamed() or cancelled():
                raise
            delay = backoff(attempt, requested)
            attempt += 1
            sink = on_retry.get()
            if sink is not None:
                try:
                    sink(attempt, delay, reason_of(e))
                except Exception:  # noqa: BLE001 - an observer never breaks the call
                    pass
            ev = threading.Event()
            end = time.monotonic() + delay
            while not cancelled() and time.monotonic() < end:
                ev.wait(min(0.05, max(0.0, end - time.monotonic())))
            if cancelled():
                raise RunCancelled("cancelled while waiting to retry") from e
