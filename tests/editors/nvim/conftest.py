import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nvim_support import Env  # noqa: E402


@pytest.fixture
def nv(tmp_path):
    env = Env(tmp_path)
    yield env
    env.cleanup()
