"""The runtime: one session context for every entry point, agentic functions, providers, the agent
loop, workspace tools, sub-agents, role threads and subprocess bodies. See docs/runtime.md.

Module order (each imports only those before it; tests/test_layers.py checks there is no cycle):
errors, cancellable, permissions, writer (SessionWriter), tool_context, tools, providers, relay,
subagent_pool → budget, runtime_api (what the modules below the Runtime use of it) → context
(session_context, the ContextVars, which hold a RuntimeApi) → turns,
calls (model calls), ask_user, subprocess_body → agentic → loop → subagents, roles → runtime (the
Runtime: provider, handlers, the tool list it gives the loop) → subprocess_child; mcp_servers (a
session's MCP servers) → mcp_tools (their tools), used by the daemon and the CLI (docs/mcp.md). This file is the
composition root: it tells session_context how to build the default Runtime."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# `ask_user` is a function and a module of the same name: bound here, so that importing the module
# (which sets the package's attribute to it) cannot shadow the function
from .ask_user import answers_file_handler, ask_user, refuse_handler, terminal_handler
from .context import RuntimeFactory, install_runtime_factory

if TYPE_CHECKING:
    from ..core.settings import Settings
    from .runtime_api import RuntimeApi
    from .agentic import agentic_function
    from .context import (SessionContext, current_call_id, current_runtime, current_turn_id, current_writer,
                          session_context)
    from .errors import (AskUserUnavailableError, PathRefusedError, PermissionDeniedError, RunCancelled,
                         SubprocessBodyError)
    from .loop import retry_point, run_task, run_turn
    from .permissions import allow_policy
    from .providers import make_provider, provider_from_env
    from .roles import session_scope
    from .runtime import Runtime, create_runtime
    from .tools import Tool, WORKSPACE_TOOLS
    from .turns import TurnResult

# The other public names load on first use (PEP 562), as the client package's do: a process that
# imports one module of the runtime (the `sessiondag run` parent: its errors, providers and
# ask_user handlers) does not pay for the agent loop, the model calls and the Runtime it never runs.
_FROM = {  # public name -> the module defining it
    "agentic_function": ".agentic", "allow_policy": ".permissions", "session_scope": ".roles",
    "TurnResult": ".turns", "Runtime": ".runtime", "create_runtime": ".runtime",
    **dict.fromkeys(("SessionContext", "current_call_id", "current_runtime", "current_turn_id", "current_writer",
                     "session_context"), ".context"),
    **dict.fromkeys(("AskUserUnavailableError", "PathRefusedError", "PermissionDeniedError", "RunCancelled",
                     "SubprocessBodyError"), ".errors"),
    **dict.fromkeys(("retry_point", "run_task", "run_turn"), ".loop"),
    **dict.fromkeys(("make_provider", "provider_from_env"), ".providers"),
    **dict.fromkeys(("Tool", "WORKSPACE_TOOLS"), ".tools"),
}


def _create_runtime(*, config: Settings) -> RuntimeApi:
    """The default Runtime (runtime.create_runtime), its module imported at the first one built."""
    create: RuntimeFactory = importlib.import_module(".runtime", __name__).create_runtime
    return create(config=config)


install_runtime_factory(_create_runtime)  # `session_context()` without a runtime builds Runtime()

__all__ = [
    "agentic_function", "ask_user", "answers_file_handler", "refuse_handler", "terminal_handler",
    "SessionContext", "session_context", "current_call_id", "current_runtime", "current_turn_id",
    "current_writer", "AskUserUnavailableError", "PathRefusedError", "PermissionDeniedError",
    "RunCancelled", "SubprocessBodyError", "TurnResult", "run_task", "run_turn", "retry_point",
    "make_provider", "provider_from_env", "session_scope", "Runtime", "allow_policy", "create_runtime",
    "Tool", "WORKSPACE_TOOLS",
]


def __getattr__(name: str) -> object:
    """A public name, imported from its module the first time it is read (then cached here)."""
    where = _FROM.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
