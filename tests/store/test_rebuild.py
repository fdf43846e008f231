"""A session directory holding a complete git repository but no session.json and/or journal (a
`git clone --bare`, a restore from a backup of the repository) is rebuilt from its newest commit
and opens normally; real damage stays `corrupt`."""

import os
import shutil
import subprocess

import pytest

from sessiondag import Call
from sessiondag.core.errors import SessionResumeError
from sessiondag.store import SessionStore
from store_helpers import git, tree_digest

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


@pytest.fixture
def original(tmp_path):
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    store = SessionStore(state)
    s = store.session(store.open_session("orig", working_dir=work).id)
    committed = []
    for turn in range(3):
        for i in range(4):
            committed.append(s.append(Call("user", "u", output=f"t{turn} m{i}", predecessor=s.head_id)).id)
        s.commit_turn()
    committed.append(s.append(Call("llm", "m", output="b" * 70_000, predecessor=s.head_id)).id)  # spilled
    s.commit_turn()
    uncommitted = s.append(Call("user", "u", output="after the last commit", predecessor=s.head_id)).id
    store.close()
    return state, work, os.path.join(state, "sessions", "orig"), committed, uncommitted


def _clone(src_git, dest):
    r = subprocess.run(["git", "clone", "-q", "--bare", src_git, dest], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _opens_with(state, sid, work, ids, absent=(), spilled_at=-1):
    store = SessionStore(state)
    try:
        h = store.resume_session(sid, working_dir=work)
        s = store.session(sid)
        assert [c.id for c in s.get_branch()][: len(ids)] == ids
        for a in absent:
            assert a not in s.graph.nodes
        assert s.full_value(s.get_node(ids[spilled_at]).output) == "b" * 70_000
        # it keeps working: a new turn, committed, fsck-clean, reopened by a fresh store
        n = s.append(Call("user", "u", output="on the copy", predecessor=s.head_id))
        assert s.commit_turn() is not None
        r = git(os.path.join(s.path, "git"), "fsck", "--strict", "--no-dangling")
        assert r.returncode == 0 and "error" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
        assert h.id == sid
    finally:
        store.close()
    store = SessionStore(state)
    try:
        assert store.session(sid).get_branch()[-1].id == n.id
    finally:
        store.close()


def test_a_bare_git_clone_placed_as_a_session_opens(original):
    state, work, path, committed, uncommitted = original
    os.makedirs(os.path.join(state, "sessions", "copy"))
    _clone(os.path.join(path, "git"), os.path.join(state, "sessions", "copy", "git"))
    _opens_with(state, "copy", work, committed, absent=[uncommitted])


def test_a_bare_clone_as_the_session_directory_itself_opens(original):
    state, work, path, committed, uncommitted = original
    _clone(os.path.join(path, "git"), os.path.join(state, "sessions", "flat"))
    _opens_with(state, "flat", work, committed, absent=[uncommitted])


def test_a_restore_without_session_json_keeps_even_uncommitted_nodes(original):
    state, work, path, committed, uncommitted = original
    os.unlink(os.path.join(path, "session.json"))
    _opens_with(state, "orig", work, committed + [uncommitted], spilled_at=-2)
    info = SessionStore(state).list_sessions(work)
    assert [i["session_id"] for i in info] == ["orig"]


def test_a_restore_without_the_journal_opens_from_the_newest_commit(original):
    state, work, path, committed, uncommitted = original
    os.unlink(os.path.join(path, "journal.log"))
    _opens_with(state, "orig", work, committed, absent=[uncommitted])


@pytest.mark.parametrize("what", ["no-commit", "unreadable-commit"])
def test_a_repository_without_a_readable_commit_stays_corrupt(tmp_path, what):
    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    SessionStore(state)
    path = os.path.join(state, "sessions", "broken")
    os.makedirs(path)
    subprocess.run(["git", "init", "-q", "--bare", os.path.join(path, "git")], check=True)
    if what == "unreadable-commit":
        with open(os.path.join(path, "git", "refs", "heads", "main"), "w") as f:
            f.write("1" * 40 + "\n")
    before = tree_digest(state)
    with pytest.raises(SessionResumeError) as ei:
        SessionStore(state).resume_session("broken", working_dir=work)
    assert ei.value.reason == "corrupt" and ei.value.should_clear_handle
    assert tree_digest(state) == before  # a failed resume writes nothing
    shutil.rmtree(path)
