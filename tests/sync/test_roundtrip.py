"""Push from one state dir, clone into another, continue there, pull back — over every transport
(a bare repo by path and file://, git daemon, smart HTTP, ssh and scp-style to sshd)."""

import os
import subprocess

from sessiondag.core.settings import Settings
from sessiondag.sync import listing, pull, push, remotes

from .conftest import add_turn, fsck, make_session, shape, store_at


def test_push_clone_continue_pull_back(tmp_path, remote_url):
    url, repo = remote_url
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a, b = store_at(tmp_path / "a"), store_at(tmp_path / "b")
    make_session(a, "s-one", wd, turns=2)
    make_session(a, "s-two", wd, turns=1)
    r = remotes.resolve(a.state_dir, url)
    for sid in ("s-one", "s-two"):
        assert push.push(a, r, sid, Settings())["status"] == "pushed"
    rows = {row["session_id"]: row for row in listing.list_remote(r)}
    assert set(rows) == {"s-one", "s-two"}
    assert rows["s-one"]["title"] == "turn 0 of s-one"
    assert rows["s-one"]["working_dir"] == os.path.realpath(wd)
    assert rows["s-one"]["identity"] == {"kind": "path", "path": os.path.realpath(wd)}

    got = pull.clone(b, r, "s-one", working_dir=wd)
    assert got["status"] == "cloned"
    assert shape(b, "s-one") == shape(a, "s-one")
    # a clone is listed under its title, as a session begun here is (session/list reads session.json)
    assert {row["session_id"]: row["title"] for row in b.list_sessions()}["s-one"] == "turn 0 of s-one"
    sb = b.session("s-one")
    add_turn(sb, "continued on machine b")
    assert push.push(b, r, "s-one", Settings())["status"] == "pushed"

    back = pull.pull(a, r, "s-one")
    assert back["status"] == "fast_forward" and back["added"] == 2
    assert shape(a, "s-one") == shape(b, "s-one")
    assert a.session("s-one").head_id == sb.head_id
    # a second pull has nothing to do; the pushed merge commit fast-forwards the remote
    assert push.push(a, r, "s-one", Settings())["status"] == "pushed"
    assert pull.pull(b, r, "s-one")["status"] in ("fast_forward", "merged")
    assert shape(a, "s-one") == shape(b, "s-one")
    assert pull.pull(b, r, "s-one")["status"] == "up_to_date"

    for store in (a, b):
        fsck(os.path.join(store.path_of("s-one"), "git"))
    fsck(repo)
    # the real git CLI clones the remote and reads every session's log
    mirror = str(tmp_path / "mirror.git")
    subprocess.run(["git", "clone", "-q", "--mirror", repo, mirror], check=True)
    for sid in ("s-one", "s-two"):
        log = subprocess.run(["git", "-C", mirror, "log", "--format=%s", f"refs/sessiondag/{sid}/main"],
                             capture_output=True, text=True, check=True).stdout
        assert "turn 1: completed" in log
    a.close()
    b.close()
