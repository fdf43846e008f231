"""A prerequisite a test needs and this machine lacks fails the test with a set-up message naming the
make target that installs it; nothing is skipped because a tool is missing (`make test` installs all
of them through the make files; each target below installs one part)."""

from __future__ import annotations

from typing import NoReturn

import pytest


def setup_failed(what: str, target: str) -> NoReturn:
    pytest.fail(f"set-up: {what} is missing: run `make {target}` (`make test` runs it)", pytrace=False)


def require(ok: object, what: str, target: str) -> None:
    """Fail with the set-up message unless `ok`."""
    if not ok:
        setup_failed(what, target)
