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


@pytest.fixture
def daemon_env(tmp_path):
    """make(script yaml text) -> (state dir, environment) for a daemon with the scripted provider."""
    def make(script_text):
        script = tmp_path / "script.yaml"
        script.write_text(script_text)
        state = tmp_path / "state"
        env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script),
                   SESSIONDAG_HOME=str(state))
        return str(state), env
    return make
