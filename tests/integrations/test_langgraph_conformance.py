"""LangGraph's official checkpointer conformance suite (PyPI `langgraph-checkpoint-conformance`)
against SessiondagSaver and AsyncSessiondagSaver on a real store in a temp directory.

Every capability the suite knows is implemented, so every one is run and must pass; the report is
printed (`-s`) so its per-capability counts are visible."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from sessiondag.integrations.langgraph import AsyncSessiondagSaver, SessiondagSaver

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("cls", [SessiondagSaver, AsyncSessiondagSaver])
async def test_conformance_all_capabilities(cls, tmp_path):
    n = 0

    @checkpointer_test(name=cls.__name__)
    async def factory():
        nonlocal n
        n += 1
        saver = cls(tmp_path / f"state{n}")  # a fresh store per capability suite
        yield saver
        saver.close()

    report = await validate(factory, progress=ProgressCallbacks.quiet())
    report.print_report()
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}
    for cap, res in report.results.items():
        assert res.detected, f"{cap} not detected"
        assert res.passed, f"{cap}: {res.failures}"
        assert res.tests_passed > 0 and res.tests_failed == 0
    assert report.passed_all_base()
