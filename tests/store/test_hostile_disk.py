"""A state dir nobody can subvert (issue 19, items 6 and 7): a session whose entries are not plain
files and directories (a planted symlink, a FIFO) is refused as `corrupt` naming the entry, and
nothing is written or blocked through it; whatever the umask, nothing the store creates is
writable by group or others."""

import os
import shutil
import stat

import pytest

from sessiondag.core.errors import SessionResumeError, StorageError
from sessiondag.core.model import Call
from sessiondag.store import SessionStore

from journal_plant import contents, plant_link

ENTRIES = ["lock", "journal.log", "session.json", "open.lock", "turn.lock", "running", "git",
           "git/HEAD", "git/objects/pack", "git/refs/heads", "git/refs/heads/main"]


def _session(state_dir, workdir, sid="h1"):
    store = SessionStore(state_dir)
    s = store.session(store.open_session(sid, working_dir=workdir).id)
    u = s.append(Call("user", "me", output="kept", predecessor="ROOT"))
    s.append(Call("code", "f", status="running", caller=u.id))  # a lease under running/
    s.commit_turn()
    open(s.turn_lock_path, "ab").close()
    path = s.path
    store.close()
    return path


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_planted_symlink_is_refused_naming_it_and_never_followed(state_dir, workdir, tmp_path, entry):
    path = _session(state_dir, workdir)
    victim = str(tmp_path / "outside")
    plant_link(path, entry, victim)
    before = contents(victim)
    store = SessionStore(state_dir)
    for attempt in (lambda: store.resume_session("h1", working_dir=workdir), lambda: store.session("h1")):
        with pytest.raises(SessionResumeError) as ei:
            attempt()
        assert ei.value.reason == "corrupt" and entry in str(ei.value) and "symlink" in str(ei.value)
    store.close()
    assert contents(victim) == before


def test_a_fifo_is_refused_without_blocking(state_dir, workdir):
    path = _session(state_dir, workdir)
    os.unlink(os.path.join(path, "lock"))
    os.mkfifo(os.path.join(path, "lock"))
    store = SessionStore(state_dir)
    with pytest.raises(SessionResumeError) as ei:
        store.session("h1")
    assert ei.value.reason == "corrupt" and "lock is not a regular file" in str(ei.value)
    store.close()


def test_a_symlink_swapped_in_while_open_is_not_followed(state_dir, workdir, tmp_path):
    """After the open's check: the lease directory replaced by a link to an outside directory."""
    path = _session(state_dir, workdir, "h2")
    store = SessionStore(state_dir)
    s = store.session("h2")
    victim = tmp_path / "outside-running"
    victim.mkdir()
    shutil.rmtree(os.path.join(path, "running"))
    os.symlink(victim, os.path.join(path, "running"))
    with pytest.raises(StorageError):
        s.append(Call("code", "g", status="running", caller=s.get_branch()[-1].id))
    assert os.listdir(victim) == []
    store.close()


def _loose(top):
    bad = []
    for path, dirs, files in os.walk(top):
        for name in dirs + files + ([] if path != str(top) else ["."]):
            p = os.path.join(path, name)
            mode = os.lstat(p).st_mode
            if mode & 0o022 or (stat.S_ISDIR(mode) and mode & 0o077):
                bad.append(f"{os.path.relpath(p, top)} {stat.S_IMODE(mode):04o}")
    return bad


def test_umask_000_makes_nothing_writable_by_others(tmp_path, workdir):
    state = tmp_path / "fresh-state"
    old = os.umask(0)
    try:
        store = SessionStore(state)
        s = store.session(store.open_session("m1", working_dir=workdir).id)
        prev = s.append(Call("user", "me", output="x" * 40_000, predecessor="ROOT"))  # spilled: a loose blob
        for i in range(6):  # packs and their .idx, merged once a tier fills
            prev = s.append(Call("user", "me", output=f"turn {i}", predecessor=prev.id))
            s.commit_turn()
        s.append(Call("code", "f", status="running", caller=prev.id))
        store.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    assert _loose(state) == []
