"""What a push writes is a pack git reads: every record with its own object header.

The push hands dulwich each record's compressed chunks (push.pack_records), which dulwich writes as
they are — so they must hold the header as well as the zlib data. This holds when the objects come
from deltified packs (the session's git dir repacked by the git CLI: read_raw resolves deltas) and
for an object large enough to need a multi-byte size header. Checked by git itself on the remote:
receive-pack behind a real git daemon on 127.0.0.1 and a bare repository by path, then
`git verify-pack -v` on every pack and `git fsck --strict`, and a clone by the git CLI reads the
big output back.
"""

from __future__ import annotations

import glob
import os
import random
import subprocess

import pytest

from sessiondag.core.settings import Settings
from sessiondag.sync import push, remotes

from . import git_servers
from .conftest import add_turn, fsck, make_session, store_at


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def _big_output(seed: int) -> str:
    rng = random.Random(seed)   # incompressible enough that the record's size header is multi-byte
    return "".join(rng.choice("0123456789abcdef") for _ in range(3 << 20))


def _verify_packs(repo: str) -> None:
    packs = glob.glob(os.path.join(repo, "objects", "pack", "*.idx"))
    loose = _git("-C", repo, "count-objects", "-v")
    assert packs or "count: 0" not in loose, "nothing arrived"
    for idx in packs:
        _git("verify-pack", "-v", idx)           # raises (check=True) on a bad header or zlib stream
    fsck(repo)


@pytest.fixture(params=["git", "path"])
def remote(request, tmp_path):
    if request.param == "path":
        yield git_servers.bare_repo(str(tmp_path / "sessions.git")), str(tmp_path / "sessions.git")
        return
    srv = git_servers.git_daemon(str(tmp_path / "srv"))
    try:
        yield srv.url, srv.repo
    finally:
        srv.close()


def test_pushed_from_deltified_packs_and_a_big_object_git_verifies(tmp_path, remote):
    url, repo = remote
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    store = store_at(tmp_path / "a")
    s = make_session(store, "s", wd, turns=6, tool_output="similar tool output line\n" * 400)
    big = _big_output(1)
    add_turn(s, "the big one", tool_output=big)
    git_dir = os.path.join(s.path, "git")
    store.close()
    _git("-C", git_dir, "repack", "-adf", "--no-write-bitmap-index", "--window=50", "--depth=50")   # every object re-read from deltas
    deltas = [line for idx in glob.glob(os.path.join(git_dir, "objects", "pack", "*.idx"))
              for line in _git("verify-pack", "-v", idx).splitlines() if len(line.split()) == 7]  # + depth, base
    assert deltas, "the repack made no deltas: the case is not covered"

    store = store_at(tmp_path / "a")
    try:
        s = store.session("s")
        r = remotes.resolve(store.state_dir, url)
        push.push(store, r, "s", Settings())             # first push: everything, read from the deltas
        _verify_packs(repo)
        add_turn(s, "one more", tool_output=big[:-10] + "0123456789")   # a near copy of the big one
        push.push(store, r, "s", Settings())             # incremental
        _verify_packs(repo)
    finally:
        store.close()
    clone = str(tmp_path / "cli-clone")
    _git("clone", "--bare", "-q", repo, clone)
    _git("-C", clone, "fetch", "-q", repo, "+refs/sessiondag/*:refs/sessiondag/*")
    fsck(clone)
    blobs = _git("-C", clone, "cat-file", "--batch-all-objects", "--batch-check").splitlines()
    assert any(line.split()[1] == "blob" and int(line.split()[2]) >= len(big) for line in blobs)
