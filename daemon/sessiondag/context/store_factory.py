"""The one way an application builds its session store (`open_store`): settings resolved once at
the entry point and handed down frozen, and every commit hook the layers above the store need
installed, so that no entry point can forget one. A bare `SessionStore` has no hook (a library
user's sessions would never age); build through this (tests/test_settings_edge.py: outside store/
only integrations/threads.py builds a bare one, for the LangGraph saver, whose checkpoint chains
have no user turns to age).

    from sessiondag.context import open_store
    store = open_store()                      # $SESSIONDAG_HOME …, the process's settings now
    store = open_store(path, settings=s)      # an entry point that resolved its own

The daemon adds its workspace checkpoints on top (workspace/checkpointer.py); the hooks are those
of docs/architecture.md "Layers" (today: the aging boundary's advance, context/aging.py).
"""

from __future__ import annotations

import os

from ..core.settings import Settings
from ..core.settings_source import current
from ..store import SessionStore
from ..store.session import CommitHook
from .aging import advance_aging

COMMIT_HOOKS: tuple[CommitHook, ...] = (advance_aging,)


def open_store(state_dir: str | os.PathLike[str] | None = None, *, settings: Settings | None = None) -> SessionStore:
    """A SessionStore with the application's commit hooks and `settings` (default: the process's,
    resolved now, once: the store and its sessions keep that frozen object)."""
    frozen = settings if settings is not None else current()
    return SessionStore(state_dir, commit_hooks=COMMIT_HOOKS, settings=frozen)


def install_hooks(store: SessionStore) -> SessionStore:
    """Give a store built elsewhere the application's commit hooks (idempotent); returns it."""
    for hook in COMMIT_HOOKS:
        store.add_commit_hook(hook)
    return store
