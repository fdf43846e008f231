"""Fixtures of the report tests: the rich session (report_support.py), one real Chromium for the
module (chromium.py) and where screenshots go (tests/report/artifacts/, or $SESSIONDAG_ARTIFACTS)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from chromium import Browser  # noqa: E402
from report_support import make_rich_session  # noqa: E402


@pytest.fixture(scope="module")
def rich(tmp_path_factory):
    return make_rich_session(tmp_path_factory.mktemp("rich"))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Browser(tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


@pytest.fixture
def page(browser):
    p = browser.page()
    yield p
    p.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    d = Path(os.environ.get("SESSIONDAG_ARTIFACTS") or Path(__file__).parent / "artifacts") / "report"
    d.mkdir(parents=True, exist_ok=True)
    return d
