import os
import sys

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "acp"))
sys.path.insert(0, HERE)

from support import Env  # noqa: E402


@pytest.fixture
def acp_env(tmp_path):
    e = Env(tmp_path)
    yield e
    e.stop_daemon()
