"""open_store: an application's store, its settings resolved once (frozen), its commit hooks installed;
and the entry points that build their stores through it (a CLI command, here)."""

import os
import sys

import pytest

from sessiondag.context.aging import AGED_KEY, advance_aging
from sessiondag.context.store_factory import install_hooks, open_store
from sessiondag.core.settings import Settings
from sessiondag.store import SessionStore

from .harness import aged_to_the_last_turn, commit_chat_turns

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
from cli_support import run_cli  # noqa: E402


def test_the_store_has_the_hooks_and_its_commits_age(tmp_path, tail_of_one_turn):
    store = open_store(tmp_path / "state")
    assert store.commit_hooks == [advance_aging]
    s = store.session(store.open_session(None, working_dir=None).id)
    commit_chat_turns(s, 3)
    assert aged_to_the_last_turn(s)
    store.close()


def test_settings_are_resolved_once_and_stay_frozen(tmp_path, monkeypatch):
    monkeypatch.setenv("SESSIONDAG_PACK_COMPRESSION", "3")
    store = open_store(tmp_path / "state")
    s = store.session(store.open_session(None, working_dir=None).id)
    monkeypatch.setenv("SESSIONDAG_PACK_COMPRESSION", "7")
    monkeypatch.setenv("SESSIONDAG_CONFIG", str(tmp_path / "a-file-that-would-be-read.toml"))
    assert store.settings().pack_compression == 3 and s.settings() is store.settings()
    assert open_store(tmp_path / "other").settings().pack_compression == 7  # a new entry point resolves anew
    given = Settings(pack_compression=5)
    assert open_store(tmp_path / "given", settings=given).settings() is given
    store.close()


def test_a_store_built_elsewhere_gets_the_hooks_once(tmp_path):
    bare = SessionStore(tmp_path / "state")
    assert bare.commit_hooks == []
    assert install_hooks(install_hooks(bare)) is bare and bare.commit_hooks == [advance_aging]
    bare.close()


@pytest.mark.process
def test_a_cli_command_commits_through_a_hooked_store(tmp_path, tail_of_one_turn):
    """`sessiondag sessions name` (a title) commits through open_store: the aging boundary moves with it
    (the tail of one turn is recorded by the session's first write)."""
    home = tmp_path / "home"
    store = SessionStore(home)  # a bare store writes the session: no boundary yet
    s = store.session(store.open_session("cli", working_dir=None).id)
    commit_chat_turns(s, 3)
    assert AGED_KEY not in s.graph.extra
    store.close()
    r = run_cli(["sessions", "name", "cli", "the main line"], home=home, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    again = SessionStore(home)
    assert AGED_KEY in again.session("cli").graph.extra
    again.close()
