"""What the modules the Runtime is built from (loop, calls, replay, agentic, subprocess_body,
budget …) use of it, as a Protocol: runtime/runtime.py's Runtime sits above them (it calls them),
so they cannot name its class (a type-only import is an import too, and a cycle:
tests/layer_rules.py). mypy checks that the Runtime is a `RuntimeApi` where it hands itself over."""

from __future__ import annotations

from typing import Protocol

from .budget import Budget, Spend
from .cancellable import ToolHost
from .context import SessionWriter
from .providers.base import Provider
from .tools import Tool


class RuntimeApi(ToolHost, Protocol):
    @property
    def provider(self) -> Provider: ...
    @property
    def identity(self) -> str: ...
    @property
    def max_steps(self) -> int: ...
    @property
    def tools(self) -> tuple[Tool, ...]: ...
    @property
    def budget(self) -> Budget | None: ...
    @property
    def spend(self) -> Spend: ...

    def emit(self, kind: str, **data: object) -> None:
        """Progress for the entry point's observer (CLI: stderr; daemon: agent/did_update)."""

    def wait_subagents(self, timeout: float | None = None) -> bool:
        """Wait until the sub-agents this runtime spawned are done; True if all finished."""

    def pin_system_prompt(self, w: SessionWriter) -> None:
        """Record the session's system prompt at HEAD if it changed."""
