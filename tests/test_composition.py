"""Objects own their state (docs/architecture.md): no class is a shared-state mixin, one that
declares the attributes of the class it is mixed into under `if TYPE_CHECKING:` and reads or sets
them (Session's catch-up and events, the daemon's lifecycle and the LangGraph saver's thread
maintenance were such mixins; each is now an object its owner holds, with an explicit interface)."""

from __future__ import annotations

import ast
from pathlib import Path

import sessiondag

DAEMON = Path(sessiondag.__file__).parent


def mixins(source: str) -> list[str]:
    """Classes whose body holds an `if TYPE_CHECKING:` block (the host's attributes, declared)."""
    return [f"{c.lineno}: {c.name}" for c in ast.walk(ast.parse(source)) if isinstance(c, ast.ClassDef)
            for n in c.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]


def test_no_class_declares_its_hosts_state():
    found = {str(p.relative_to(DAEMON)): m for p in sorted(DAEMON.rglob("*.py")) if (m := mixins(p.read_text()))}
    assert found == {}


def test_the_scan_sees_a_mixin():
    planted = ("from typing import TYPE_CHECKING\nclass Upkeep:\n    if TYPE_CHECKING:\n        store: object\n"
               "    def prune(self):\n        self.store.prune()\nclass Saver(Upkeep):\n    pass\n")
    assert mixins(planted) == ["2: Upkeep"]
    assert mixins(planted.replace("    if TYPE_CHECKING:\n        store: object\n", "")) == []
