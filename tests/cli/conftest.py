import pytest

from clitest_support import stop_daemon_of


@pytest.fixture
def home(tmp_path):
    """A state dir for the CLI under test; any daemon serving it is stopped afterwards."""
    d = tmp_path / "sdhome"
    yield d
    stop_daemon_of(d)
