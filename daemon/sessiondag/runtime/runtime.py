"""The Runtime: provider + handlers (ask_user, permissions, events) + cancellation, and model calls.

`Runtime.exec(prompt)` makes one model call from wherever it is called (at top level, under the
session's turn lock like a turn): it renders the session's
context with the current function as the frame, injects the docstrings of the active agentic
functions, calls the provider (streaming), and records the llm node with gen_ai usage and its
render manifest. The agent loop (loop.py) makes its calls through the same `model_call` (calls.py).

This module is the top of the runtime package (the composition root): the Runtime carries the one
unified tool list (`rt.tools`: workspace tools, ask_user, spawn_agent, extra tools) that the loop
is given, so the loop imports neither ask_user nor the sub-agents. The modules below take the
runtime as a plain object (`rt`) and never import this one.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, Callable

from ..core.model import ROOT
from ..core.settings import Settings
from ..core.settings_source import current as current_settings
from .ask_user import ASK_USER_TOOL, default_handler
from .budget import Budget, Spend
from .calls import inject_instructions, model_call, render
from .context import SessionWriter, current_call_id, current_frames, current_turn, current_writer, session_context
from .errors import PermissionDeniedError, RunCancelled
from .loop import record_system_prompt_for
from .model_settings import describe
from .permissions import Permissions, allow_policy, env_permissions
from .providers import Provider, provider_from_env
from .subagent_pool import SubAgentPool
from .subagents import SPAWN_AGENT_TOOL
from .tools import WORKSPACE_TOOLS, ClientFs, Tool

if TYPE_CHECKING:
    from .command_tool import Terminal
from .turns import turn_lock

DEFAULT_IDENTITY = (
    "You are the sessiondag agent. You work inside the user's working directory through the tools "
    "you are given. Read before you change anything, keep changes minimal, and finish with a short "
    "answer that says what you did."
)

EventSink = Callable[[str, dict[str, object]], None]


class Runtime:
    """Everything a model call needs besides the session: the provider and the caller's handlers.

    ask_user:    callable(question: str, options: list[str] | None) -> str (see ask_user.py)
    permissions: callable(kind: "write" | "run", detail: dict) -> bool
    on_event:    callable(kind, data) for progress (CLI: stderr; daemon: agent/did_update)
    budget:      a budget.Budget over the settings' defaults, checked before every model call
    """

    def __init__(self, provider: Provider | None = None, *, identity: str = DEFAULT_IDENTITY,
                 ask_user: Callable[..., str] | None = None, permissions: Permissions | None = None,
                 on_event: EventSink | None = None, max_steps: int = 40, extra_tools: tuple[Tool, ...] = (),
                 subagents: bool = True, read_hard_links: bool | None = None,
                 budget: Budget | None = None, sandbox: str | None = None, sandbox_network: bool | None = None,
                 sandbox_via: str | None = None, settings: dict[str, Any] | None = None,
                 config: Settings | None = None):
        # `config`: the application's settings, resolved once by the entry point that builds this
        # runtime (its store's: `store.settings()`); a library caller without one: the process's, now
        self.config = config = config if config is not None else current_settings()
        self.provider = provider if provider is not None else provider_from_env(settings=config)
        # what a session's first turn records as its model (model_settings.py): the entry point's
        # names (a profile, say), else what the provider says of itself
        self.settings = settings if settings is not None else describe(None, self.provider)
        self.record_model = False  # True: this runtime's turns record `settings` (a model change)
        self.client_fs: ClientFs | None = None  # a ClientFs (runtime/tools.py): the file tools go through the client
        self.client_terminal: Terminal | None = None  # run_command through the client's terminal (runtime/command_tool.py)
        self.identity = identity
        if ask_user is None:
            ask_user = default_handler(config)
        self.ask_user_handler = ask_user
        self.permissions = permissions if permissions is not None else env_permissions(config)
        self.on_event = on_event
        self.max_steps = max_steps
        self.extra_tools = tuple(extra_tools)
        self.subagents_enabled = subagents
        # the file tools read a hard-linked file only with this (agent.read_hard_links); never write one
        self.read_hard_links = config.read_hard_links if read_hard_links is None else read_hard_links
        self.beneath = config.beneath   # how the file tools open paths (workspace.beneath)
        # run_command's OS sandbox (agent.sandbox: workspace-write | read-only | off; command_tool.py)
        self.sandbox = config.sandbox if sandbox is None else sandbox
        self.sandbox_network = config.sandbox_network if sandbox_network is None else sandbox_network
        self.sandbox_via = config.sandbox_via if sandbox_via is None else sandbox_via  # auto | landlock | bwrap
        self.tools: tuple[Tool, ...] = default_tools(subagents) + self.extra_tools
        self.budget = budget        # limits over the settings' defaults (budget.py); sub-agents share them
        self.spend = Spend()        # what this runtime's calls spent: the run budget's measure
        self.cancel_event = threading.Event()
        self._on_cancel: list[Callable[[], None]] = []   # woken by cancel() (a wait that is not a poll)
        self._pool: SubAgentPool | None = None

    # --- cancellation --------------------------------------------------------------------------
    def cancel(self) -> None:
        """Also from a signal handler: the hooks it calls must be safe there (SimpleQueue.put is)."""
        self.cancel_event.set()
        for fn in list(self._on_cancel):
            fn()

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call `fn` when the run is cancelled (at once if it is); returns what unhooks it."""
        self._on_cancel.append(fn)
        if self.cancel_event.is_set():
            fn()
        return lambda: self._on_cancel.remove(fn) if fn in self._on_cancel else None

    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def check_cancelled(self) -> None:
        if self.cancel_event.is_set():
            raise RunCancelled("the run was cancelled")

    # --- handlers -------------------------------------------------------------------------------
    def emit(self, kind: str, **data: object) -> None:
        if self.on_event is not None:
            try:
                self.on_event(kind, data)
            except Exception as e:  # a broken observer must not break the run
                print(f"sessiondag: event observer failed: {type(e).__name__}: {e}", file=sys.stderr)

    def require_permission(self, kind: str, detail: dict[str, object]) -> None:
        if not self.permissions(kind, detail):
            raise PermissionDeniedError(kind, str(detail.get("path") or detail.get("command") or detail))

    @property
    def subagent_pool(self) -> SubAgentPool:
        if self._pool is None:
            self._pool = SubAgentPool(self)
        return self._pool

    def subagents_pending(self) -> int:
        """Sub-agents (with their follow-up turns) of this runtime still at work."""
        return self._pool.pending() if self._pool is not None else 0

    def wait_subagents(self, timeout: float | None = None) -> bool:
        """Wait until every spawned sub-agent and its follow-up turn is done. True if all finished."""
        return self._pool.wait(timeout) if self._pool is not None else True

    def subagents_running(self) -> bool:
        """True while a sub-agent this runtime spawned (or its follow-up turn) still runs."""
        return self._pool is not None and bool(self._pool.pending())

    # --- model calls -----------------------------------------------------------------------------
    def exec(self, prompt: str | None = None, *, tools: list[dict[str, Any]] | None = None) -> str:
        """One model call from the current position (function body, turn, or top level); returns the text."""
        w = current_writer()
        if w is None:
            with session_context(runtime=self) as h:
                print(f"sessiondag: ad-hoc session {h.session_id}", file=sys.stderr)
                return self.exec(prompt, tools=tools)
        if current_call_id() is None and current_turn() is None:  # a turn of its own (see run_turn)
            with turn_lock(w):
                self.pin_system_prompt(w)  # a top-level call sees what a chat turn sees
                return self._exec(w, prompt, tools)
        return self._exec(w, prompt, tools)

    def _exec(self, w: SessionWriter, prompt: str | None, tools: list[dict[str, Any]] | None) -> str:
        frames = current_frames()
        turn = current_turn()
        call_id = current_call_id()
        frame = frames[-1].node_id if frames else None
        head = turn.tip if turn is not None else w.head_id
        messages, manifest = render(w, head, frame)
        messages = inject_instructions(messages, frames)
        if prompt is not None:
            messages.append({"role": "user", "content": prompt})
            manifest = {**manifest, "prompt": prompt}  # so a replay rebuilds the very same messages
        if call_id is not None:
            caller, pred, top = call_id, None, False
        elif turn is not None and turn.start_id is not None:
            caller, pred, top = turn.start_id, turn.tip, False
        else:
            h = w.head_id
            caller, pred, top = ROOT, (ROOT if h == ROOT else h), True
        try:
            node, comp = model_call(w, self, messages, tools or [], caller=caller, predecessor=pred,
                                    input=prompt, manifest=manifest, frames=frames)
        finally:
            if top:
                w.commit_turn()
        if turn is not None and pred is not None:
            turn.tip = node.id
            turn.node_ids.append(node.id)
        return comp.text

    def pin_system_prompt(self, w: SessionWriter) -> None:
        """Pin the session's system prompt — the very text a chat turn records (identity + the unified
        tool list) — at HEAD if it changed. A call outside any chat turn (a function called from a
        script, a top-level exec) renders under it like a turn does."""
        record_system_prompt_for(w, self, list(self.tools))


def default_tools(subagents: bool = True) -> tuple[Tool, ...]:
    """The unified tool list every Runtime starts from (the same for turns and sub-agents, so the
    system prompt stays byte-stable; a sub-agent that calls spawn_agent gets an error instead)."""
    return tuple(WORKSPACE_TOOLS) + (ASK_USER_TOOL,) + ((SPAWN_AGENT_TOOL,) if subagents else ())


def create_runtime(**kw: Any) -> Runtime:
    """The runtime a bare session_context() builds: provider from the environment, default handlers."""
    return Runtime(**kw)


__all__ = ["Runtime", "create_runtime", "allow_policy", "env_permissions", "default_tools", "DEFAULT_IDENTITY"]
