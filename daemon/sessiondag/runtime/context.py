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
import threading
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..context.store_factory import install_hooks, open_store
from ..core.model import Call
from ..store import SessionStore, checkpoints
from ..store.session import Session
from .errors import RunCancelled

if TYPE_CHECKING:
    from ..store.session_handle import SessionHandle


class SessionWriter:
    """Thin writer over one session: every runtime write goes through here.

    The runtime writes one session from several threads (sub-agents, the daemon's workers); each
    operation holds the session lock (`Session.lock`: re-entrant per thread, exclusive across
    threads and processes), and callers that read several things consistently hold `w.lock`.

    A fenced thread (`fence(ident)`: a tool thread the turn abandoned at a cancel, tool_thread.py)
    cannot write: its appends, updates, spawns and commits raise RunCancelled and change nothing."""

    def __init__(self, store: SessionStore, session: Session):
        self.store = store
        self.session = session
        self.lock = session.lock
        self._fenced: set[int] = set()

    def fence(self, ident: int | None) -> None:
        if ident is not None:
            self._fenced.add(ident)

    def unfence(self, ident: int) -> None:
        self._fenced.discard(ident)

    def _check_fence(self) -> None:
        if self._fenced and threading.get_ident() in self._fenced:
            raise RunCancelled("this tool thread was left behind by a cancelled turn: it cannot write")

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def head_id(self) -> str:
        with self.lock:
            return self.session.head_id

    def append(self, call: Call, **kw: Any) -> Call:
        self._check_fence()
        with self.lock:
            return self.session.append(call, **kw)

    def update(self, node_id: str, **kw: Any) -> Call:
        self._check_fence()
        with self.lock:
            return self.session.update(node_id, **kw)

    def spawn_branch(self, caller_node_id: str, **kw: Any) -> str:
        self._check_fence()
        with self.lock:
            return self.session.spawn_branch(caller_node_id, **kw)

    def commit_turn(self, message: str | None = None, *, checkpoint: bool = False,
                    opener: str | None = None) -> str | None:
        self._check_fence()
        s = self.session
        sync = getattr(s.snapshots, "sync", None) if checkpoint else None
        if sync is not None:   # the working dir's watcher catches up first (workspace/checkpointer.py)
            sync(s)
        taken = None
        if checkpoint and opener is not None and s.snapshots is not None:
            # walked and hashed without the session lock (readers and other writers go on); only
            # its pack and tree writes take it, then the commit names it
            taken = checkpoints.take(s, s.settings().pack_compression, lock=s.lock.locked)
        with self.lock:
            return s.commit_turn(message, checkpoint=checkpoint, opener=opener, taken=taken)

    def get_node(self, node_id: str) -> Call:
        with self.lock:
            return self.session.get_node(node_id)

    def put_blob(self, data: bytes) -> str:
        with self.lock:
            return self.session.put_blob(data)


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
_current_runtime: ContextVar[Any] = ContextVar("sessiondag_runtime", default=None)
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
    runtime: Any
    created: bool

    @property
    def session(self) -> Session:
        return self.writer.session

    def handle(self) -> SessionHandle:
        return self.store.handle(self.writer.session)


RuntimeFactory = Callable[..., Any]  # (config=Settings) -> a Runtime
_runtime_factory: list[RuntimeFactory] = []  # [the default runtime's factory], see install_runtime_factory


def install_runtime_factory(factory: RuntimeFactory) -> None:
    """Set what `session_context` builds when no runtime is passed. The Runtime sits above this
    module (it calls session_context for ad-hoc sessions), so the package's composition root,
    runtime/__init__.py, installs `runtime.create_runtime` here when the package is imported."""
    _runtime_factory[:] = [factory]


def _default_runtime(store: SessionStore) -> Any:
    if not _runtime_factory:
        raise RuntimeError("no default runtime factory installed (import sessiondag.runtime)")
    return _runtime_factory[0](config=store.settings())


def _default_store(store: SessionStore | None) -> SessionStore:
    """The store to work in, with the aging boundary's commit hook installed (a store passed in
    gets it too: every turn committed through the runtime advances the boundary)."""
    return install_hooks(store) if store is not None else open_store()


@contextmanager
def session_context(session_id: str | None = None, *, working_dir: str | os.PathLike[str] | None = None,
                    agent_id: str = "main", turn_id: str | None = None, runtime: Any = None,
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
    tokens: list[Token[Any]] = [  # the vars' values differ in type
        _store.set(writer),
        _current_turn_id.set(turn_id),
        _current_runtime.set(rt),
        _call_id.set(None),
        _frames.set(()),
        _turn.set(None),
    ]
    try:
        yield SessionContext(st, writer, h.id, h.working_dir, agent_id, turn_id, rt, created)
    finally:
        for tok in reversed(tokens):
            tok.var.reset(tok)


@contextmanager
def turn_scope(turn: TurnState) -> Iterator[TurnState]:
    """Mark `turn` as the chain being extended (inside a session_context)."""
    if _store.get() is None:
        raise RuntimeError("turn_scope needs an active session_context")
    tokens: list[Token[Any]] = [_turn.set(turn), _current_turn_id.set(turn.start_id or _current_turn_id.get())]
    try:
        yield turn
    finally:
        for tok in reversed(tokens):
            tok.var.reset(tok)


@contextmanager
def call_scope(frame: Frame) -> Iterator[Frame]:
    """Make `frame`'s node the current call: nested nodes take it as their caller."""
    if _store.get() is None:
        raise RuntimeError("call_scope needs an active session_context")
    tokens: list[Token[Any]] = [_call_id.set(frame.node_id), _frames.set(_frames.get() + (frame,))]
    try:
        yield frame
    finally:
        for tok in reversed(tokens):
            tok.var.reset(tok)


# --- readers ---------------------------------------------------------------------------------
def current_writer() -> SessionWriter | None:
    return _store.get()


def current_runtime() -> Any:
    return _current_runtime.get()


def current_call_id() -> str | None:
    return _call_id.get()


def current_turn_id() -> str | None:
    return _current_turn_id.get()


def current_turn() -> TurnState | None:
    return _turn.get()


def current_frames() -> tuple[Frame, ...]:
    return _frames.get()
