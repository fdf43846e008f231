"""The Runtime: provider + handlers (ask_user, permissions, events) + cancellation, and model calls.

`Runtime.exec(prompt)` makes one model call from wherever it is called: it renders the session's
context with the current function as the frame, injects the docstrings of the active agentic
functions, calls the provider (streaming), and records the llm node with gen_ai usage and its
render manifest. The agent loop (loop.py) makes its calls through the same `model_call`.
"""

from __future__ import annotations

import inspect
import sys
import threading
import traceback
from typing import Any, Callable

from ..core.model import MODEL_KEY, ROOT, USAGE_INPUT, USAGE_OUTPUT, Call, error_metadata
from ..core.settings_source import current as current_settings
from .context import (Frame, SessionWriter, TurnState, current_call_id, current_frames, current_turn,
                      current_writer, session_context)
from .errors import PermissionDeniedError, RunCancelled
from .providers import Completion, Provider, provider_from_env

DEFAULT_IDENTITY = (
    "You are the sessiondag agent. You work inside the user's working directory through the tools "
    "you are given. Read before you change anything, keep changes minimal, and finish with a short "
    "answer that says what you did."
)

EventSink = Callable[[str, dict[str, Any]], None]


class Runtime:
    """Everything a model call needs besides the session: the provider and the caller's handlers.

    ask_user:    callable(question: str, options: list[str] | None) -> str (see ask_user.py)
    permissions: callable(kind: "write" | "run", detail: dict) -> bool
    on_event:    callable(kind, data) for progress (CLI: stderr; daemon: agent/did_update)
    """

    def __init__(self, provider: Provider | None = None, *, identity: str = DEFAULT_IDENTITY,
                 ask_user: Callable[..., str] | None = None, permissions: Callable[[str, dict], bool] | None = None,
                 on_event: EventSink | None = None, max_steps: int = 40, extra_tools: tuple = (),
                 subagents: bool = True):
        self.provider = provider if provider is not None else provider_from_env()
        self.identity = identity
        if ask_user is None:
            from .ask_user import default_handler
            ask_user = default_handler()
        self.ask_user_handler = ask_user
        self.permissions = permissions if permissions is not None else env_permissions()
        self.on_event = on_event
        self.max_steps = max_steps
        self.extra_tools = tuple(extra_tools)
        self.subagents_enabled = subagents
        self.cancel_event = threading.Event()
        self._pool = None

    # --- cancellation --------------------------------------------------------------------------
    def cancel(self) -> None:
        self.cancel_event.set()

    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def check_cancelled(self) -> None:
        if self.cancel_event.is_set():
            raise RunCancelled("the run was cancelled")

    # --- handlers -------------------------------------------------------------------------------
    def emit(self, kind: str, **data: Any) -> None:
        if self.on_event is not None:
            try:
                self.on_event(kind, data)
            except Exception as e:  # a broken observer must not break the run
                print(f"sessiondag: event observer failed: {type(e).__name__}: {e}", file=sys.stderr)

    def require_permission(self, kind: str, detail: dict[str, Any]) -> None:
        if not self.permissions(kind, detail):
            raise PermissionDeniedError(kind, str(detail.get("path") or detail.get("command") or detail))

    @property
    def subagent_pool(self):
        if self._pool is None:
            from .subagents import SubAgentPool
            self._pool = SubAgentPool(self)
        return self._pool

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
        frames = current_frames()
        turn = current_turn()
        call_id = current_call_id()
        if call_id is None and turn is None:
            record_project_system_prompt(w, self)  # a top-level call sees what a chat turn sees
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


def env_permissions() -> Callable[[str, dict], bool]:
    """Permission policy of the setting agent.allow ($SESSIONDAG_ALLOW: comma list of write,run,all);
    default: refuse."""
    return allow_policy(set(current_settings().allow))


def allow_policy(allowed: set[str] | frozenset[str]) -> Callable[[str, dict], bool]:
    allowed = frozenset(allowed)

    def policy(kind: str, detail: dict) -> bool:
        return kind in allowed or "all" in allowed
    policy.allowed = allowed  # type: ignore[attr-defined]
    return policy


def create_runtime(**kw: Any) -> Runtime:
    """The runtime a bare session_context() builds: provider from the environment, default handlers."""
    return Runtime(**kw)


def record_project_system_prompt(w: SessionWriter, rt: Runtime) -> None:
    """Pin the session's system prompt — the very text a chat turn records (identity + the unified
    tool list) — at HEAD if it changed. A call outside any chat turn (a function called from a
    script, a top-level exec) renders under it like a turn does."""
    from .loop import record_system_prompt_for, toolset
    record_system_prompt_for(w, rt, toolset(rt))


def render(w: SessionWriter, head_id: str, frame: str | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Render the wire messages for a call at `head_id` (frame: the current function node)."""
    from ..context.messages import render_messages
    from .context import current_runtime
    fmt = getattr(getattr(current_runtime(), "provider", None), "wire_format", "openai")  # the provider's format
    with w.lock:
        messages, manifest = render_messages(w.session, head_id, frame=frame, format=fmt)
        if not isinstance(manifest, dict):
            from ..context.aging import current_manifest
            manifest = current_manifest(w.session)
    return list(messages), manifest


def instructions_of(frames: tuple[Frame, ...]) -> list[tuple[str, str]]:
    return [(f.name, inspect.cleandoc(f.doc)) for f in frames if f.doc and f.doc.strip()]


def instructions_block(frames: tuple[Frame, ...]) -> str | None:
    docs = instructions_of(frames)
    if not docs:
        return None
    return "\n\n".join(f"Instructions of `{name}`:\n{doc}" for name, doc in docs)


def inject_instructions(messages: list[dict[str, Any]], frames: tuple[Frame, ...]) -> list[dict[str, Any]]:
    """Insert the active functions' docstrings, outermost first, right after the system prompt.
    (model_call records the same block in the manifest, so a replay rebuilds these bytes.)"""
    from ..context.messages import with_instructions
    return with_instructions(messages, instructions_block(frames))


def model_call(w: SessionWriter, rt: Runtime, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
               caller: str, predecessor: str | None, input: Any = None, manifest: dict[str, Any] | None = None,
               frames: tuple[Frame, ...] = ()) -> tuple[Call, Completion]:
    """Record a running llm node, stream the provider into it, finalize it. The partial transcript is
    persisted (status error/cancelled) before any mid-stream exception propagates."""
    rt.check_cancelled()
    model = rt.provider.model
    manifest = dict(manifest or {})
    block = instructions_block(frames)
    if block is not None:  # what the callers injected (inject_instructions with these frames)
        manifest["instructions"] = block
    md: dict[str, Any] = {MODEL_KEY: model, "render_manifest": manifest, "provider": rt.provider.name}
    md.update(getattr(rt.provider, "request_metadata", dict)())  # temperature, max tokens
    if block is not None:
        md["instructions_from"] = [name for name, _ in instructions_of(frames)]
    node = w.append(Call("llm", model, input=input, caller=caller, predecessor=predecessor,
                         status="running", metadata=md))
    rt.emit("node_appended", session_id=w.session_id, node=node.to_dict())
    parts: list[str] = []

    def on_text(delta: str) -> None:
        parts.append(delta)
        rt.emit("text_delta", session_id=w.session_id, node_id=node.id, delta=delta)

    try:
        comp = rt.provider.complete(messages, tools, on_text=on_text, cancelled=rt.cancelled)
    except RunCancelled as e:
        _tag(e, node.id)
        finish(w, rt, node.id, output="".join(parts), status="cancelled")
        raise
    except BaseException as e:
        _tag(e, node.id)
        finish(w, rt, node.id, output="".join(parts) or getattr(e, "partial", ""), status="error",
               metadata={"error": error_metadata(e, traceback.format_exc())})
        raise
    finish(w, rt, node.id, output=comp.text, status="completed",
           metadata={USAGE_INPUT: comp.input_tokens, USAGE_OUTPUT: comp.output_tokens,
                     "gen_ai.response.model": comp.model or model, "finish_reason": comp.finish_reason})
    return w.get_node(node.id), comp


def _tag(e: BaseException, node_id: str) -> None:
    """Mark the exception as already recorded on `node_id` (callers must not record it again)."""
    try:
        e.sessiondag_node_id = node_id
    except AttributeError:
        pass


def finish(w: SessionWriter, rt: Runtime, node_id: str, **fields: Any) -> Call:
    c = w.update(node_id, **fields)
    rt.emit("node_updated", session_id=w.session_id, node=c.to_dict())
    return c


__all__ = ["Runtime", "create_runtime", "allow_policy", "env_permissions", "model_call", "render",
           "inject_instructions", "DEFAULT_IDENTITY", "TurnState"]
