"""The runtime: one session context for every entry point, agentic functions, providers, the agent
loop, workspace tools, sub-agents, role threads and subprocess bodies. See docs/runtime.md.

Module order (each imports only those before it; tests/test_layers.py checks there is no cycle):
errors, permissions, tools, providers, relay → context (session_context, the ContextVars) → turns,
calls (model calls), ask_user, subprocess_body → agentic → loop → subagents, roles → runtime (the
Runtime: provider, handlers, the tool list it gives the loop) → subprocess_child; mcp_servers (a
session's MCP servers) → mcp_tools (their tools), used by the daemon and the CLI (docs/mcp.md). This file is the
composition root: it tells session_context how to build the default Runtime."""

from .agentic import agentic_function
from .ask_user import answers_file_handler, ask_user, refuse_handler, terminal_handler
from .context import (SessionContext, current_call_id, current_runtime, current_turn_id, current_writer,
                      install_runtime_factory, session_context)
from .errors import (AskUserUnavailableError, PathRefusedError, PermissionDeniedError, RunCancelled,
                     SubprocessBodyError)
from .loop import retry_point, run_task, run_turn
from .permissions import allow_policy
from .providers import make_provider, provider_from_env
from .roles import session_scope
from .runtime import Runtime, create_runtime
from .tools import Tool, WORKSPACE_TOOLS
from .turns import TurnResult

install_runtime_factory(create_runtime)  # `session_context()` without a runtime builds Runtime()

__all__ = [
    "agentic_function", "ask_user", "answers_file_handler", "refuse_handler", "terminal_handler",
    "SessionContext", "session_context", "current_call_id", "current_runtime", "current_turn_id",
    "current_writer", "AskUserUnavailableError", "PathRefusedError", "PermissionDeniedError",
    "RunCancelled", "SubprocessBodyError", "TurnResult", "run_task", "run_turn", "retry_point",
    "make_provider", "provider_from_env", "session_scope", "Runtime", "allow_policy", "create_runtime",
    "Tool", "WORKSPACE_TOOLS",
]
