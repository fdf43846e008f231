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
