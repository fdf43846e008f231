"""session_context: the one entry point that installs the per-turn ContextVars.

Every entry point (the daemon's agent dispatcher, `sessiondag run`, the subprocess runner, sub-agent
threads, tests, plain Python callers) goes through `session_context`. It is the only code that sets
the ContextVars below (`turn_scope` and `call_scope`, also here, set the turn and call vars inside
it); a test greps the package for `.set(` on them.

Session boundary: an id passed is reused (created under that id if it is missing); nothing passed
creates a new session whose id the yielded handle exposes. Leaving the context resets the vars in
reverse order (exceptions included) and never deletes or closes the session.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from ..context.store_factory import install_hooks, open_store
from ..store import SessionStore
from ..store.session import Session
from .writer import SessionWriter as SessionWriter  # its home before writer.py; rpc/ and cli/ import it here

if TYPE_CHECKING:
    from ..core.settings import Settings
    from ..store.session_handle import SessionHandle
    from .runtime_api import RuntimeApi


@dataclass(frozen=True)
class Frame:
    """An active agentic function (or tool call): its node, name and instructions (docstring)."""

    node_id: str
    name: str
    doc: str | None = None


@dataclass
class TurnState:
    """The chat chain a loop is extending: where it started (`start_id`, the turn's user node or a
    spawn-branch root) and its current tip (the last chain node)."""

    start_id: str | None
    tip: str
    node_ids: list[str] = field(default_factory=list)
    before_tools: Callable[[], None] | None = None   # called once before the chain's first tool call


_store: ContextVar[SessionWriter | None] = ContextVar("sessiondag_store", default=None)
_current_turn_id: ContextVar[str | None] = ContextVar("sessiondag_turn_id", default=None)
_current_runtime: ContextVar[RuntimeApi | None] = ContextVar("sessiondag_runtime", default=None)
_call_id: ContextVar[str | None] = ContextVar("sessiondag_call_id", default=None)
_frames: ContextVar[tuple[Frame, ...]] = ContextVar("sessiondag_frames", default=())
_turn: ContextVar[TurnState | None] = ContextVar("sessiondag_turn", default=None)

CONTEXT_VARS = (_store, _current_turn_id, _current_runtime, _call_id, _frames, _turn)


@dataclass(frozen=True)
class SessionContext:
    """What `session_context` yields. `session_id` is always set."""

    store: SessionStore
    writer: SessionWriter
    session_id: str
    working_dir: str | None
    agent_id: str
    turn_id: str | None
    runtime: RuntimeApi | None   # None: entered with create_runtime_if_none=False and no runtime
    created: bool

    @property
    def session(self) -> Session:
        return self.writer.session

    def handle(self) -> SessionHandle:
        return self.store.handle(self.writer.session)


class RuntimeFactory(Protocol):
    """What builds the default runtime: runtime.create_runtime (a Runtime)."""

    def __call__(self, *, config: Settings) -> RuntimeApi: ...


_runtime_factory: list[RuntimeFactory] = []  # [the default runtime's factory], see install_runtime_factory


def install_runtime_factory(factory: RuntimeFactory) -> None:
    """Set what `session_context` builds when no runtime is passed. The Runtime sits above this
    module (it calls session_context for ad-hoc sessions), so the package's composition root,
    runtime/__init__.py, installs `runtime.create_runtime` here when the package is imported."""
    _runtime_factory[:] = [factory]


def _default_runtime(store: SessionStore) -> RuntimeApi:
    if not _runtime_factory:
        raise RuntimeError("no default runtime factory installed (import sessiondag.runtime)")
    return _runtime_factory[0](config=store.settings())


def _default_store(store: SessionStore | None) -> SessionStore:
    """The store to work in, with the aging boundary's commit hook installed (a store passed in
    gets it too: every turn committed through the runtime advances the boundary)."""
    return install_hooks(store) if store is not None else open_store()


@contextmanager
def session_context(session_id: str | None = None, *, working_dir: str | os.PathLike[str] | None = None,
                    agent_id: str = "main", turn_id: str | None = None, runtime: RuntimeApi | None = None,
                    create_runtime_if_none: bool = True, store: SessionStore | None = None,
                    allow_working_dir_mismatch: bool = False) -> Iterator[SessionContext]:
    """Install the per-turn session ContextVars and tear them down on exit.

    `working_dir=None` means: the session's recorded working dir when it exists, else the cwd.
    A resume into another working dir raises SessionResumeError (reason working_dir_mismatch)
    unless `allow_working_dir_mismatch`. Raises before setting anything, so a refused resume
    leaves no state behind."""
    st = _default_store(store)
    created = session_id is None or not st.exists(session_id)
    if working_dir is None:
        if not created:
            assert session_id is not None  # an existing session has an id
            working_dir = st.session(session_id).info.get("working_dir")
            allow_working_dir_mismatch = allow_working_dir_mismatch or working_dir is None
        else:
            working_dir = os.getcwd()
    h = st.open_session(session_id, working_dir=working_dir,
                        allow_working_dir_mismatch=allow_working_dir_mismatch)
    writer = SessionWriter(st, st.session(h.id))
    rt = runtime
    if rt is None and create_runtime_if_none:
        rt = _default_runtime(st)
    resets = [  # each var's reset to its token (the vars' values differ in type)
        partial(_store.reset, _store.set(writer)),
        partial(_current_turn_id.reset, _current_turn_id.set(turn_id)),
        partial(_current_runtime.reset, _current_runtime.set(rt)),
        partial(_call_id.reset, _call_id.set(None)),
        partial(_frames.reset, _frames.set(())),
        partial(_turn.reset, _turn.set(None)),
    ]
    try:
        yield SessionContext(st, writer, h.id, h.working_dir, agent_id, turn_id, rt, created)
    finally:
        for reset in reversed(resets):
            reset()


@contextmanager
def turn_scope(turn: TurnState) -> Iterator[TurnState]:
    """Mark `turn` as the chain being extended (inside a session_context)."""
    if _store.get() is None:
        raise RuntimeError("turn_scope needs an active session_context")
    resets = [partial(_turn.reset, _turn.set(turn)),
              partial(_current_turn_id.reset, _current_turn_id.set(turn.start_id or _current_turn_id.get()))]
    try:
        yield turn
    finally:
        for reset in reversed(resets):
            reset()


@contextmanager
def call_scope(frame: Frame) -> Iterator[Frame]:
    """Make `frame`'s node the current call: nested nodes take it as their caller."""
    if _store.get() is None:
        raise RuntimeError("call_scope needs an active session_context")
    resets = [partial(_call_id.reset, _call_id.set(frame.node_id)),
              partial(_frames.reset, _frames.set(_frames.get() + (frame,)))]
    try:
        yield frame
    finally:
        for reset in reversed(resets):
            reset()


# --- readers ---------------------------------------------------------------------------------
def current_writer() -> SessionWriter | None:
    return _store.get()


def current_runtime() -> RuntimeApi | None:
    return _current_runtime.get()


def current_call_id() -> str | None:
    return _call_id.get()


def current_turn_id() -> str | None:
    return _current_turn_id.get()


def current_turn() -> TurnState | None:
    return _turn.get()


def current_frames() -> tuple[Frame, ...]:
    return _frames.get()
