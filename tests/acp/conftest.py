import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from support import Env  # noqa: E402


@pytest.fixture
def acp_env(tmp_path):
    e = Env(tmp_path)
    yield e
    e.stop_daemon()
