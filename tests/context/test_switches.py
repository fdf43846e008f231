"""A bad value of an environment switch fails loudly, naming the variable — in the library call
that reads it and at the start of every `sessiondag` command — never a silent fallback."""

import os
import sys

import pytest

from sessiondag import Call
from sessiondag.context.aging import advance_aging
from sessiondag.core.settings_source import current as check_environment
from sessiondag.context.render import render_context
from sessiondag.core.errors import ConfigError
from sessiondag.store import SessionStore

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
from cli_support import run_cli  # noqa: E402

BAD = [
    ("SESSIONDAG_NODE_SPILL", "10k"),
    ("SESSIONDAG_NODE_SPILL", "-5"),
    ("SESSIONDAG_TOOL_AGING", "disabled"),
    ("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "abc"),
    ("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "-1"),
    ("SESSIONDAG_TOOL_AGING_MAX_RESULT_CHARS", "2k"),
    ("SESSIONDAG_EXPOSE_DEFAULT", "everything"),
    ("SESSIONDAG_JOURNAL_ROTATE_BYTES", "4MiB"),
    ("SESSIONDAG_PACK_COMPRESSION", "11"),
    ("SESSIONDAG_PACK_COMPRESSION", "best"),
]
# (variable, value, Settings field, the value it must come out as): "" means not set, so the default
GOOD = [("SESSIONDAG_NODE_SPILL", "off", "node_spill", None),
        ("SESSIONDAG_NODE_SPILL", "10240", "node_spill", 10240),
        ("SESSIONDAG_NODE_SPILL", "", "node_spill", 32 * 1024),
        ("SESSIONDAG_TOOL_AGING", "off", "tool_aging", False),
        ("SESSIONDAG_TOOL_AGING", "ON", "tool_aging", True),
        ("SESSIONDAG_TOOL_AGING_TAIL_TURNS", "0", "tool_aging_tail_turns", 0),
        ("SESSIONDAG_EXPOSE_DEFAULT", "full", "expose_default", "full"),
        ("SESSIONDAG_EXPOSE_DEFAULT", "None", "expose_default", "none"),
        ("SESSIONDAG_PACK_COMPRESSION", "6", "pack_compression", 6)]


@pytest.mark.parametrize("name,value,field,expected", GOOD)
def test_good_values_are_taken(monkeypatch, name, value, field, expected):
    monkeypatch.setenv(name, value)
    settings = check_environment()
    assert getattr(settings, field) == expected
    source = settings.sources.get(field)
    assert (source.kind if source else "default") == ("env" if value else "default")


@pytest.mark.parametrize("name,value", [(n, v) for n, v in BAD])
def test_a_bad_switch_stops_the_store_being_built_and_an_open_one_goes_on(tmp_path, monkeypatch, name, value):
    store = SessionStore(tmp_path / "state", commit_hooks=(advance_aging,))  # built before the bad value
    s = store.session(store.start_session("sw", working_dir=None).id)
    s.append(Call("user", "u", output="hi", predecessor="ROOT"))
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=name):
        SessionStore(tmp_path / "other")   # an entry point resolves the settings: it stops there
    assert not (tmp_path / "other").exists() or not os.listdir(tmp_path / "other" / "sessions")
    # the open store resolved its settings once: the bad value set since is not read
    s.append(Call("user", "u", output="x" * 100, predecessor="ROOT"))
    s.commit_turn()
    render_context(s)
    store.close()


@pytest.mark.parametrize("name,value", [("SESSIONDAG_NODE_SPILL", "10k"), ("SESSIONDAG_TOOL_AGING", "disabled")])
@pytest.mark.parametrize("command", [["run", "hello"], ["sessions", "list"], ["serve", "--stdio"]])
@pytest.mark.process
def test_every_command_stops_at_start(tmp_path, name, value, command):
    r = run_cli(command, home=tmp_path / "home", cwd=tmp_path, env={name: value}, input="")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert name in r.stderr and value in r.stderr
    assert not os.path.exists(tmp_path / "home" / "sessions") or not os.listdir(tmp_path / "home" / "sessions")
