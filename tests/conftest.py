import os

import pytest

pytest_plugins = ["tiers"]   # test tiers: markers, --tier=fast and its guard (tests/tiers.py)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def state_dir(tmp_path):
    d = tmp_path / "state"
    d.mkdir()
    return d


@pytest.fixture
def workdir(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    return d


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """No test may touch the user's real state or runtime directories."""
    monkeypatch.setenv("SESSIONDAG_HOME", str(tmp_path / "home-state"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # nor the user's config file
    monkeypatch.delenv("SESSIONDAG_CONFIG", raising=False)
    os.makedirs(tmp_path / "runtime", mode=0o700, exist_ok=True)
