"""The layers hold: tests/layer_rules.py's scan of the real tree finds no violation, and each rule
fails, naming file, line and rule, when a violation of it is injected into a copy of the tree."""

from __future__ import annotations

import pytest

import layer_rules
from layer_rules import Module, load_modules, report, violations, with_source

def test_the_layers_hold():
    msg = report(violations(real_modules()))
    assert not msg, msg


_REAL: dict[str, Module] = {}


def real_modules() -> dict[str, Module]:
    if not _REAL:
        _REAL.update(load_modules())
    return _REAL


def appended(mods: dict[str, Module], rel: str, text: str) -> tuple[dict[str, Module], int]:
    """`mods` with `text` appended to the module at `rel`; and the line number of its first line."""
    old = next(m.source for m in mods.values() if m.rel == rel)
    if not old.endswith("\n"):
        old += "\n"
    return with_source(mods, rel, old + text), old.count("\n") + 1


INJECTED = [
    # (module to append to, code, rule, detail fragment)
    ("store/session.py", "from ..runtime import loop\n", "layer-order", "store may not import runtime"),
    ("store/session.py", "from ..context.aging import advance_aging\n", "layer-order",
     "store may not import context"),
    ("workspace/binding.py", "from ..store import SessionStore\n", "layer-order", "workspace may not import store"),
    ("integrations/threads.py", "from ..runtime import Runtime\n", "layer-order",
     "integrations may not import runtime"),
    ("context/render.py", "from ..runtime.turns import TurnLock\n", "layer-order", "context may not import runtime"),
    ("rpc/codec.py", "from ..cli import main\n", "layer-order", "rpc may not import cli"),
    ("runtime/loop.py", "from ..store.handles import _norm_dir\n", "private-import",
     "from sessiondag.store.handles import _norm_dir"),
    ("runtime/loop.py", "from ..context import cache\nX = cache._caches\n", "private-attr",
     "cache._caches (cache comes from context)"),
    ("runtime/loop.py", "def f(w):\n    return w.session._graph\n", "private-attr-heuristic",
     "w.session._graph: _graph is no private name of runtime"),
    ("runtime/loop.py", "def f():\n    from .subagents import SPAWN_AGENT_TOOL\n", "function-import",
     "import of sessiondag.runtime.subagents inside a function"),
    ("runtime/tools.py", "def f():\n    import dulwich\n", "function-import", "dulwich is not an optional dependency"),
    ("runtime/turns.py", "from .loop import run_turn\n", "import-cycle", "sessiondag.runtime.turns"),
    ("runtime/loop.py", "from .ask_user import ASK_USER_TOOL\n", "injected",
     "sessiondag.runtime.loop must not import sessiondag.runtime.ask_user"),
]


@pytest.mark.parametrize("where,code,rule,detail", INJECTED, ids=[f"{r}:{w}" for w, _, r, _ in INJECTED])
def test_an_injected_violation_fails_naming_file_line_and_rule(where, code, rule, detail):
    mods, line = appended(real_modules(), f"sessiondag/{where}", code)
    msg = report(violations(mods))
    hits = [m for m in msg.splitlines() if f"[{rule}]" in m and detail in m]
    assert hits, msg
    if rule != "import-cycle":      # a cycle is reported at one of its edges
        assert any(h.strip().startswith(f"sessiondag/{where}:{line + code.count(chr(10)) - 1}:") or
                   h.strip().startswith(f"sessiondag/{where}:{line}:") for h in hits), hits


def test_the_client_may_import_nothing_of_the_daemon():
    mods, line = appended(real_modules(), "sessiondag_client/__init__.py",
                          "try:\n    import sessiondag.rpc.codec\nexcept ImportError:\n    pass\n")
    msg = report(violations(mods))
    assert f"sessiondag_client/__init__.py:{line + 1}: [client-alone] sessiondag_client imports " \
           "sessiondag.rpc.codec" in msg, msg


def test_allowed_exceptions_pass_and_stale_allowlist_entries_fail(monkeypatch):
    mods, _ = appended(real_modules(), "sessiondag/runtime/providers/openai_compat.py",
                       "def f():\n    import openai\n    import json\n")
    mods, _ = appended(mods, "sessiondag/cli/run.py", "def f():\n    from ..rpc import codec\n")
    found = violations(mods)
    extra = [v for v in found if v.file in ("sessiondag/runtime/providers/openai_compat.py", "sessiondag/cli/run.py")]
    assert extra == []
    stale_key = ("function-import", "sessiondag/rpc/gone.py", "import of sessiondag.runtime inside a function")
    monkeypatch.setitem(layer_rules.ALLOWED_VIOLATIONS, stale_key, "nobody (a test entry)")
    msg = report(found)
    assert "no longer occur" in msg and repr(stale_key) in msg


def test_the_module_map_names_every_module():
    """docs/architecture.md's module map names every module of every package, and only modules that
    exist (tests/docs_tidy.py; the other doc checks are in tests/test_docs.py)."""
    import docs_tidy
    assert docs_tidy.unmapped_modules() == [], "add them to docs/architecture.md's module map"
