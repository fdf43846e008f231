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


@pytest.fixture
def session_with(tmp_path, monkeypatch):
    """`session_with({"SESSIONDAG_…": value})`: a new session whose store is built under these
    switches (a store resolves its settings once, when it is built: docs/settings.md)."""
    stores = []

    def make(env=None):
        for k, v in (env or {}).items():
            monkeypatch.setenv(k, str(v))
        store, s = new_session(tmp_path / f"state-{len(stores)}")
        stores.append(store)
        return s
    yield make
    for store in stores:
        store.close()


@pytest.fixture
def tail_of_one_turn(monkeypatch):
    """Stores built in the test age every turn but the last (rendering.tool_aging_tail_turns = 1)."""
    monkeypatch.setenv("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "1")
