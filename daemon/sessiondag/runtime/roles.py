"""Role threads: one resumable session per role under a scope.

`session_scope(scope)` derives `{scope}-{role}` (validated by `core.ids.derive_session_id`) for each
role (planner, generator, evaluator, …). Every head bound to the same role continues that role's
one thread; different roles never share one. Opening a role thread:

- no session yet, or one that is missing/corrupt/of a foreign schema → (reset and) start it fresh
  under the derived id;
- a session recorded under another working dir → the run goes on *unnamed* (a new ad-hoc session)
  and the other directory's session is left untouched (it is still resumable from there).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from ..core.errors import SessionResumeError
from ..core.ids import check_session_id, derive_session_id
from ..context.store_factory import open_store
from ..store import SessionStore
from .context import SessionContext, session_context
from .loop import run_turn

if TYPE_CHECKING:
    from .runtime import Runtime
    from .turns import TurnResult

DEFAULT_ROLES = ("planner", "generator", "evaluator")


@dataclass
class RoleThread:
    role: str
    session_id: str
    named: bool           # False: ran unnamed because the named thread belongs to another working dir
    context: SessionContext


class SessionScope:
    def __init__(self, scope: str, *, working_dir: str | os.PathLike[str], store: SessionStore | None = None,
                 runtime: Runtime | None = None):
        self.scope = check_session_id(scope)
        self.working_dir = os.fspath(working_dir)
        self.store = store if store is not None else open_store()
        self.runtime = runtime

    def session_id_for(self, role: str) -> str:
        return derive_session_id(self.scope, role)

    @contextmanager
    def thread(self, role: str, *, runtime: Runtime | None = None) -> Iterator[RoleThread]:
        """Enter the role's thread (a session_context). See the module doc for the fallbacks."""
        sid = self.session_id_for(role)
        rt = runtime if runtime is not None else self.runtime
        named = True
        if self.store.exists(sid):
            try:
                self.store.resume_session(sid, working_dir=self.working_dir)
            except SessionResumeError as e:
                if e.should_clear_handle:          # missing / corrupt / schema: start over, same name
                    self.store.reset_session(sid)
                else:                              # another working dir owns it: leave it alone
                    named = False
        with session_context(sid if named else None, working_dir=self.working_dir, store=self.store,
                             runtime=rt, agent_id=role) as ctx:
            yield RoleThread(role, ctx.session_id, named, ctx)

    def run(self, role: str, task: object, *, runtime: Runtime | None = None) -> tuple[TurnResult, RoleThread]:
        """One turn of `role`'s thread; returns (TurnResult, RoleThread)."""
        with self.thread(role, runtime=runtime) as t:
            return run_turn(task), t


def session_scope(scope: str, *, working_dir: str | os.PathLike[str], store: SessionStore | None = None,
                  runtime: Runtime | None = None) -> SessionScope:
    return SessionScope(scope, working_dir=working_dir, store=store, runtime=runtime)
