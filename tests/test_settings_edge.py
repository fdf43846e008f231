"""Settings are resolved once, at the entry point, and handed down frozen (docs/settings.md "Resolved
once, at the edge"): a store opened — by `open_store`, bare, or under an integration — keeps the
Settings it was built with whatever the config file and the environment do next; an append, a
commit and a render neither stat nor open the config file; and only the entry points ask the
process's source (an AST scan of the daemon)."""

import ast
import builtins
import os

import pytest

from sessiondag import Call
from sessiondag.context.render import render_context
from sessiondag.context.renderer import FAST, REFERENCE, renderer_for
from sessiondag.context.store_factory import open_store
from sessiondag.core.errors import ConfigError
from sessiondag.core.settings_source import config_path
from sessiondag.store import SessionStore

BUILDERS = {"open_store": open_store, "bare": SessionStore}


def _write_config(text):
    path = config_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def _turn(s, i):
    head = s.head_id
    u = s.append(Call("user", "u", output=f"question {i}", predecessor=head))
    s.append(Call("llm", "m", output="x" * 300, predecessor=u.id))
    return s.commit_turn()


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
def test_a_changed_config_file_or_environment_changes_nothing_an_open_store_does(tmp_path, monkeypatch, build):
    _write_config("[rendering]\nfast_render = false\ntool_aging_max_result_chars = 50\n")
    store = build(tmp_path / "state")
    s = store.session(store.open_session(None, working_dir=None).id)
    _turn(s, 0)
    before = store.settings()
    # the file now says otherwise, then is not even TOML; the environment sets a bad value too
    _write_config("[rendering]\nfast_render = true\ntool_aging_max_result_chars = 9\n")
    assert renderer_for(s) is REFERENCE
    _write_config("this is [not toml")
    monkeypatch.setenv("SESSIONDAG_NODE_SPILL", "10k")
    monkeypatch.setenv("SESSIONDAG_FAST_RENDER", "sometimes")
    for i in range(1, 4):
        assert _turn(s, i) is not None          # appends and commits take no reading: nothing raises
    assert len(render_context(s).nodes) == 8   # four turns of two
    assert renderer_for(s) is REFERENCE and store.settings() is before and s.settings() is before
    assert before.tool_aging_max_result_chars == 50 and before.fast_render is False
    # a new entry point resolves anew, and a bad value stops it there, before anything is written
    with pytest.raises(ConfigError):
        build(tmp_path / "other")
    assert not os.path.exists(tmp_path / "other" / "sessions") or not os.listdir(tmp_path / "other" / "sessions")
    store.close()


def test_appends_commits_and_renders_neither_stat_nor_open_the_config_file(tmp_path, monkeypatch):
    path = _write_config("[store]\njournal_rotate_bytes = 100000000\n")
    store = SessionStore(tmp_path / "state")    # bare: the store most likely to read the live source
    s = store.session(store.open_session(None, working_dir=None).id)
    _turn(s, 0)
    seen = []
    real_stat, real_open = os.stat, builtins.open

    def ours(p):
        return isinstance(p, (str, os.PathLike)) and os.fspath(p) == path

    def stat(p, *a, **kw):
        if ours(p):
            seen.append(("stat", p))
        return real_stat(p, *a, **kw)

    def opened(p, *a, **kw):
        if ours(p):
            seen.append(("open", p))
        return real_open(p, *a, **kw)
    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(builtins, "open", opened)
    for i in range(1, 30):
        _turn(s, i)
        render_context(s)
        assert renderer_for(s) is FAST
    assert seen == []
    # the counters see a resolution: a new store reads the file (so the zero above is not blindness)
    SessionStore(tmp_path / "again").close()
    assert ("open", path) in seen
    store.close()


# the entry points: each resolves the process's settings once and hands the result down
ENTRY_POINTS = {
    "core/settings_source.py": "the source itself",
    "context/store_factory.py": "open_store: an application's store, settings=None",
    "store/handles.py": "a bare SessionStore (and default_state_dir) without settings",
    "runtime/runtime.py": "a library caller's Runtime() without config",
    "runtime/providers/__init__.py": "a library caller's provider_for() without settings",
    "cli/serve.py": "the daemon's main: one resolution for its store, service and runtimes",
    "cli/demo.py": "a command's main, choosing its state dir before any store exists",
    "cli/mcp.py": "a command's main that opens no store",
}


def test_only_entry_points_ask_the_process_for_its_settings():
    from source_tree import PKG as root, modules
    found = {}
    for m in modules():
        rel, tree = m.rel, m.tree
        names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                 and (n.module or "").endswith("settings_source") for a in n.names if a.name == "current"}
        calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id in names]
        if calls or (rel == os.path.join("core", "settings_source.py")):
            found[rel] = calls
    assert set(found) <= set(ENTRY_POINTS), {k: v for k, v in found.items() if k not in ENTRY_POINTS}
    assert "store/session.py" not in found and not any(k.startswith("rpc/") for k in found)
    source = open(os.path.join(root, "core", "settings_source.py")).read()
    assert "_data" not in source and "os.stat" not in source   # no per-call stamp of the file or the environment


# where a SessionStore may be built bare, each with why (everything else builds through open_store)
BARE_STORES = {
    "context/store_factory.py": "open_store itself",
    "integrations/threads.py": "the LangGraph saver's store goes without the aging hook (a checkpoint chain "
                               "has no user turns: its boundary never moves); the Agents session's has it",
}


def test_applications_build_their_store_through_open_store():
    """docs/architecture.md: one factory builds an application's store with its settings and its
    commit hooks, so no entry point can forget one: outside store/ nothing calls SessionStore(...)
    but open_store and the places BARE_STORES names."""
    from source_tree import modules
    bare = [f"{m.rel}:{n.lineno}" for m in modules() if not m.rel.startswith("store" + os.sep)
            and m.rel not in BARE_STORES for n in ast.walk(m.tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == "SessionStore"]
    assert bare == []
