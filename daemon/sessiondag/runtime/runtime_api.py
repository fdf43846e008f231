"""What the modules the Runtime is built from (context, loop, calls, replay, agentic, subagents,
ask_user, subprocess_body, budget …) use of it, as a Protocol: runtime/runtime.py's Runtime sits
above them (it calls them), so they cannot name its class (a type-only import is an import too,
and a cycle: tests/layer_rules.py). mypy checks that the Runtime is a `RuntimeApi` where it hands
itself over. This module sits below context.py (the ContextVar `current_runtime()` reads holds a
RuntimeApi), so it imports nothing that imports context.py: the session's writer comes from
writer.py, the pool from subagent_pool.py; what a tool's body gets of it is the narrower
cancellable.py `ToolHost` (tool_context.py)."""

from __future__ import annotations

from typing import Callable, Protocol

from .budget import Budget, Spend
from .cancellable import ToolHost
from .permissions import Permissions
from .providers.base import Provider
from .subagent_pool import SubAgentPool
from .tools import Tool
from .writer import SessionWriter


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
    @property
    def ask_user_handler(self) -> Callable[[str, list[str] | None], str]:
        """ask_user.py's handler: (question, options) -> the answer (the CLI's terminal, the daemon's client)."""
    @property
    def permissions(self) -> Permissions: ...
    @property
    def subagent_pool(self) -> SubAgentPool: ...

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call `fn` when the run is cancelled (at once if it is); returns what unhooks it."""

    def emit(self, kind: str, **data: object) -> None:
        """Progress for the entry point's observer (CLI: stderr; daemon: agent/did_update)."""

    def wait_subagents(self, timeout: float | None = None) -> bool:
        """Wait until the sub-agents this runtime spawned are done; True if all finished."""

    def pin_system_prompt(self, w: SessionWriter) -> None:
        """Record the session's system prompt at HEAD if it changed."""
