import pytest

from .harness import new_session

SWITCHES = ("SESSIONDAG_TOOL_AGING", "SESSIONDAG_TOOL_AGING_TAIL_TURNS", "SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS",
            "SESSIONDAG_NODE_SPILL", "SESSIONDAG_EXPOSE_DEFAULT")


@pytest.fixture(autouse=True)
def _clean_switches(monkeypatch):
    for k in SWITCHES:
        monkeypatch.delenv(k, raising=False)


@pytest.fixture
def session(tmp_path):
    store, s = new_session(tmp_path / "state")
    yield s
    store.close()
