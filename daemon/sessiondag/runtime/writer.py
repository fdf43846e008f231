"""SessionWriter: the one writer over a session that every runtime write goes through (the turn's,
the sub-agents', the daemon's workers'), with the fence that stops a tool thread a cancelled turn
left behind. context.py's `session_context` makes one per entry; the modules below the ContextVars
(runtime_api.py, budget.py, tool_context.py) name it from here."""

from __future__ import annotations

import threading
from typing import Any, TypedDict, Unpack

from ..core.model import Call
from ..store import SessionStore, checkpoints
from ..store.session import Session
from .errors import RunCancelled


class NodeUpdate(TypedDict, total=False):
    """What `Session.update` sets on a node (its keywords): the output (any JSON: core/model.py's
    node values), the status, the metadata merged in."""

    output: Any
    status: str | None
    metadata: dict[str, Any] | None


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

    def append(self, call: Call, *, expected_head: str | None = None) -> Call:
        self._check_fence()
        with self.lock:
            return self.session.append(call, expected_head=expected_head)

    def update(self, node_id: str, **kw: Unpack[NodeUpdate]) -> Call:
        self._check_fence()
        with self.lock:
            return self.session.update(node_id, **kw)

    def spawn_branch(self, caller_node_id: str, *, source: str, name: str | None = None,
                     content: object = None) -> str:
        self._check_fence()
        with self.lock:
            return self.session.spawn_branch(caller_node_id, source=source, name=name, content=content)

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
