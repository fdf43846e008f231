import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from sessiondag.store import SessionStore  # noqa: E402


@pytest.fixture
def store(state_dir):
    s = SessionStore(state_dir)
    yield s
    s.close()
