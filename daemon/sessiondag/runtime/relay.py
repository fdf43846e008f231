"""The handler relay between a subprocess body and the process that started it.

A function body running in a spawned interpreter asks the *caller's* handlers, not defaults of its
own: `ask_user` and permission checks travel to the parent over a pair of pipes (one JSON line per
request, one per answer), and the parent answers with its runtime's handlers — the terminal in the
CLI, a server→client request through the daemon, a policy in CI. So a body behaves the same as the
same function run in-process.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

import orjson

from ..core import errors as core_errors
from . import errors as runtime_errors
from .permissions import Permissions



_PLAIN = (str, int, float, bool, type(None), list, dict)


def _rebuild_error(reply: dict[str, Any]) -> Exception:
    """The parent handler's exception, re-created in the child with its type, message and fields."""
    name, message = reply.get("type", ""), reply.get("message", "handler failed")
    cls = getattr(runtime_errors, name, None)
    if cls is None:
        cls = {c.__name__: c for c in core_errors.ERROR_CLASSES.values()}.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        return RuntimeError(f"{name}: {message}")
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    for k, v in (reply.get("attrs") or {}).items():
        setattr(exc, k, v)
    return exc


class ChildRelay:
    """The child's side: handlers that ask the parent and wait for its answer."""

    def __init__(self, read_fd: int, write_fd: int):
        self._r = os.fdopen(read_fd, "rb", buffering=0)
        self._w = write_fd
        self._lock = threading.Lock()
        self._buf = b""

    def _call(self, msg: dict[str, Any]) -> Any:
        with self._lock:
            os.write(self._w, orjson.dumps(msg) + b"\n")
            while b"\n" not in self._buf:
                chunk = self._r.read(65536)
                if not chunk:
                    raise RuntimeError("the parent process closed the handler relay")
                self._buf += chunk
            line, self._buf = self._buf.split(b"\n", 1)
        reply = orjson.loads(line)
        if not reply.get("ok"):
            raise _rebuild_error(reply)
        return reply.get("value")

    def ask_user(self, question: str, options: list[str] | None = None) -> str:
        answer: str = self._call({"kind": "ask_user", "question": question, "options": options})
        return answer

    def permissions(self, kind: str, detail: Mapping[str, object]) -> bool:
        return bool(self._call({"kind": "permission", "permission": kind, "detail": detail}))


@dataclass(frozen=True)
class Handlers:
    """The two handlers a relay answers with, when there is no Runtime to take them from."""

    ask_user_handler: Callable[[str, "list[str] | None"], str]
    permissions: Permissions


class HandlerHost(Protocol):
    """What a parent relay answers with: a Runtime's handlers, or `Handlers`'."""

    @property
    def ask_user_handler(self) -> Callable[[str, "list[str] | None"], str]: ...
    @property
    def permissions(self) -> Permissions: ...


class ParentRelay:
    """The parent's side: reads requests as they arrive and answers them with `runtime`'s handlers
    (a Runtime, or any object with `ask_user_handler` and `permissions`, e.g. `Handlers`)."""

    def __init__(self, read_fd: int, write_fd: int, runtime: HandlerHost):
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.runtime = runtime
        self._buf = b""

    def pump(self) -> bool:
        """Handle what is readable now. False once the child closed its end."""
        chunk = os.read(self.read_fd, 65536)
        if not chunk:
            return False
        self._buf += chunk
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            self._answer(orjson.loads(line))
        return True

    def _answer(self, req: dict[str, Any]) -> None:
        rt = self.runtime
        try:
            if req.get("kind") == "ask_user":
                value: str | bool = rt.ask_user_handler(req["question"], req.get("options"))
            elif req.get("kind") == "permission":
                value = bool(rt.permissions(req["permission"], req.get("detail") or {}))
            else:
                raise ValueError(f"unknown relay request {req.get('kind')!r}")
            reply: dict[str, object] = {"ok": True, "value": value}
        except Exception as e:  # the child raises the same error type in the body
            reply = {"ok": False, "type": type(e).__name__, "message": str(e),
                     "attrs": {k: v for k, v in vars(e).items() if isinstance(v, _PLAIN)}}
        try:
            os.write(self.write_fd, orjson.dumps(reply, default=str) + b"\n")
        except BrokenPipeError:
            pass  # the child is gone; its exit is handled by the caller

    def close(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass
