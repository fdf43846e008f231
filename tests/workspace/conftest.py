import pytest

from sessiondag.store import SessionStore
from sessiondag.workspace.checkpointer import install


@pytest.fixture
def store(state_dir):
    """A store whose sessions snapshot their working dir at every turn (as the daemon's and `run`'s)."""
    st = SessionStore(state_dir)
    install(st)
    yield st
    st.close()


@pytest.fixture
def store_with(state_dir, monkeypatch):
    """`store_with({"SESSIONDAG_…": value})`: another store on the same state dir, built under these
    settings (a store resolves its settings once, when it is built: docs/settings.md)."""
    stores = []

    def make(env):
        for k, v in env.items():
            if v is None:
                monkeypatch.delenv(k, raising=False)
            else:
                monkeypatch.setenv(k, str(v))
        st = SessionStore(state_dir)
        install(st)
        stores.append(st)
        return st
    yield make
    for st in stores:
        st.close()
