"""A `git repack -adb` by the git CLI leaves a pack with a reachability bitmap; every pack written
after it has none. dulwich takes the bitmaps once any pack has one and then fails on the others
(FileNotFoundError for their .bitmap), which a push or pull reported as an unreachable remote.
Sync walks the commit graph instead (transport.graph_reachability): after a repack on the remote
or in the session, push, clone and pull work on every transport, `git fsck --strict` clean. A
file of a path remote that cannot be read is the remote's data, typed as such, not "unreachable"."""

from __future__ import annotations

import os
import subprocess

import pytest

from sessiondag.core.settings import Settings
from sessiondag.sync import pull, push, remotes
from sessiondag.sync.errors import NotOnRemoteError, RemoteDataError, RemoteUnreachableError

from . import git_servers
from .conftest import add_turn, fsck, shape, store_at


def _repack(git_dir: str) -> None:
    subprocess.run(["git", "-C", git_dir, "repack", "-adbq"], check=True, capture_output=True)
    assert any(n.endswith(".bitmap") for n in os.listdir(os.path.join(git_dir, "objects", "pack")))


@pytest.mark.process
@pytest.mark.parametrize("where", ["remote", "session"])
def test_push_and_pull_after_a_git_repack_with_bitmaps(tmp_path, remote_url, where):
    url, repo = remote_url
    a, b = store_at(tmp_path / "a"), store_at(tmp_path / "b")
    a.open_session("s", working_dir=None)
    s = a.session("s")
    for i in range(3):
        add_turn(s, f"turn {i}")
    ra, rb = remotes.resolve(a.state_dir, url), remotes.resolve(b.state_dir, url)
    assert push.push(a, ra, "s", Settings())["status"] == "pushed"
    _repack(repo if where == "remote" else s.git.git_dir)
    add_turn(s, "after the repack")                                    # a pack without a bitmap
    assert push.push(a, ra, "s", Settings())["status"] == "pushed"
    assert pull.clone(b, rb, "s", working_dir=None)["status"] == "cloned"
    t = b.session("s")
    if where == "session":
        _repack(t.git.git_dir)
    add_turn(t, "on b")
    assert push.push(b, rb, "s", Settings())["status"] == "pushed"
    if where == "remote":
        _repack(repo)
    assert pull.pull(a, ra, "s")["status"] == "fast_forward"
    assert shape(a, "s") == shape(b, "s")
    for d in (s.git.git_dir, t.git.git_dir, repo):
        fsck(d)
    a.close()
    b.close()


def test_an_unreadable_file_of_a_path_remote_is_its_data_not_unreachable(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    a, b = store_at(tmp_path / "a"), store_at(tmp_path / "b")
    a.open_session("s", working_dir=None)
    add_turn(a.session("s"), "one")
    r = remotes.resolve(a.state_dir, repo)
    push.push(a, r, "s", Settings())
    pack_dir = os.path.join(repo, "objects", "pack")
    subprocess.run(["git", "-C", repo, "repack", "-adq"], check=True)
    pack = next(n for n in os.listdir(pack_dir) if n.endswith(".pack"))
    os.unlink(os.path.join(pack_dir, pack))
    os.mkdir(os.path.join(pack_dir, pack))       # its index names it; what is there cannot be read
    with pytest.raises(RemoteDataError) as e:
        pull.clone(b, remotes.resolve(b.state_dir, repo), "s", working_dir=None)
    assert not isinstance(e.value, RemoteUnreachableError)
    assert not b.exists("s")
    os.rmdir(os.path.join(pack_dir, pack))       # no pack at all: dulwich advertises no ref to what it lacks
    with pytest.raises((RemoteDataError, NotOnRemoteError)) as e:
        pull.clone(b, remotes.resolve(b.state_dir, repo), "s", working_dir=None)
    assert not isinstance(e.value, RemoteUnreachableError)
    with pytest.raises(RemoteUnreachableError):                         # still: no such repository
        pull.clone(b, remotes.resolve(b.state_dir, str(tmp_path / "nowhere.git")), "s", working_dir=None)
    a.close()
    b.close()


def test_a_lock_a_crashed_writer_left_on_a_path_remote_is_a_typed_refusal(tmp_path):
    """A writer killed mid-push (a daemon's automatic push) leaves a ref's .lock in a path remote;
    the next push is refused typed (sync_rejected, reason "locked"), never an untyped crash; once the
    lock is gone the next push completes (dulwich updates a path remote's refs one by one, so the
    refused push may have moved the main ref already: the summary then catches up)."""
    from sessiondag.sync.errors import RemoteRejectedError

    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    a = store_at(tmp_path / "a")
    a.open_session("s", working_dir=None)
    s = a.session("s")
    add_turn(s, "one")
    r = remotes.resolve(a.state_dir, repo)
    push.push(a, r, "s", Settings())
    add_turn(s, "two")
    lock = os.path.join(repo, "refs", "sessiondag", "s", "summary.lock")
    open(lock, "wb").close()
    with pytest.raises(RemoteRejectedError) as e:
        push.push(a, r, "s", Settings())
    assert e.value.data()["reason"] == "locked"
    os.unlink(lock)
    assert push.push(a, r, "s", Settings())["status"] in ("pushed", "up_to_date")
    refs = subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True, text=True).stdout
    head = subprocess.run(["git", "--git-dir", s.git.git_dir, "rev-parse", "refs/heads/main"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert f"{head} commit\trefs/sessiondag/s/main" in refs
    fsck(repo)
    a.close()
