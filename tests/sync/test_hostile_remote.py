"""What a remote sends is hostile until checked: a forged snapshot (a node whose predecessor does
not exist, a body it never sent, a record that is not a node) or a garbage summary is refused
typed (`sync_bad_remote_data`) or ignored, and nothing local changes — no session dir, no object."""

import os
import subprocess

import orjson
import pytest

from sessiondag.core.settings import Settings
from sessiondag.store.gitstore import GitSnapshots
from sessiondag.sync import listing, pull, push, remotes
from sessiondag.sync.errors import RemoteDataError

from . import git_servers
from .conftest import disk_state, make_session, store_at


def _forge(tmp, repo, sid, records, meta_extra=None):
    """A commit that looks like a session snapshot of `sid`, pushed to the remote by the git CLI."""
    git_dir = str(tmp / f"forge-{sid}-{len(os.listdir(tmp))}")
    GitSnapshots.init(git_dir)
    g = GitSnapshots(git_dir)
    meta = {"schema_version": 1, "session_id": sid, "working_dir": "/x", "created_at": 1.0, "head_id": "ROOT",
            "branch_names": {}, "spawn_heads": {}, "extra": {}, "last_seq": 5, "turn": 1,
            "usage_total": [0, 0], "usage_previous": [0, 0], "journal": {"id": "j", "offset": 0}, **(meta_extra or {})}
    chunk = b"".join(orjson.dumps(r) + b"\n" for r in records)
    sha = g.commit(meta, chunk, 1, [], "forged\n", None)
    g.close()
    subprocess.run(["git", "-C", git_dir, "push", "-q", "-f", repo, f"{sha.decode()}:refs/sessiondag/{sid}/main"],
                   check=True, capture_output=True)
    return sha


def _node(nid, seq, pred, **kw):
    return {"id": nid, "seq": seq, "created_at": 1.0, "role": "user", "name": "x", "input": None, "output": "o",
            "status": "completed", "caller": "ROOT", "predecessor": pred, "reads": [], "metadata": {}, **kw}


ROOT_REC = {"id": "ROOT", "seq": 0, "created_at": 1.0, "role": "user", "name": "ROOT", "input": None, "output": None,
            "status": "completed", "caller": "ROOT", "predecessor": None, "reads": [], "metadata": {}}


@pytest.mark.parametrize("records,why", [
    ([ROOT_REC, _node("n1", 1, "nope")], "predecessor"),
    ([ROOT_REC, _node("n1", 1, "ROOT", output={"$blob": "ab" * 20, "size": 9, "preview": ""})], "bodies"),
    ([ROOT_REC, _node("n1", 1, "ROOT", status="exploded")], "invalid"),
    ([ROOT_REC, _node("n1", 1, "ROOT"), _node("n2", 1, "n1")], "seq"),
    ([ROOT_REC, _node("n1", 1, "ROOT", role="wizard")], "invalid"),
])
def test_forged_snapshots_are_refused_and_leave_nothing(tmp_path, records, why):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a = store_at(tmp_path / "a")
    s = make_session(a, "s", wd, turns=1)
    r = remotes.resolve(a.state_dir, repo)
    push.push(a, r, "s", Settings())
    _forge(tmp_path, repo, "evil", records)
    root = s.graph.nodes["ROOT"].to_dict()          # the local ROOT itself: what differs is the rest
    _forge(tmp_path, repo, "s", [root] + records[1:])   # replaces the remote's history of a local session
    before = disk_state(s.path)
    with pytest.raises(RemoteDataError) as e:
        pull.clone(a, r, "evil")
    assert e.value.code == "sync_bad_remote_data"
    assert not os.path.exists(a.path_of("evil"))
    with pytest.raises(RemoteDataError):
        pull.pull(a, r, "s")
    assert disk_state(s.path) == before
    assert not os.listdir(os.path.join(a.state_dir, "sync", "tmp"))
    assert [n for n in os.listdir(a.sessions_dir) if not n.startswith(".")] == ["s"]
    a.close()


def test_garbage_summaries_are_shown_empty_not_trusted(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a = store_at(tmp_path / "a")
    make_session(a, "s", wd, turns=1)
    r = remotes.resolve(a.state_dir, repo)
    push.push(a, r, "s", Settings())
    head = subprocess.run(["git", "-C", repo, "rev-parse", "refs/sessiondag/s/main"], capture_output=True,
                          text=True, check=True).stdout.strip()
    for sid, body in (("t1", b"not json"), ("t2", orjson.dumps({"session_id": "someone-else", "title": "lie"})),
                      ("t3", orjson.dumps({"session_id": "t3", "title": ["x"], "nodes": "many"}))):
        blob = subprocess.run(["git", "-C", repo, "hash-object", "-w", "--stdin"], input=body, capture_output=True,
                              check=True).stdout.decode().strip()
        subprocess.run(["git", "-C", repo, "update-ref", f"refs/sessiondag/{sid}/summary", blob], check=True)
        subprocess.run(["git", "-C", repo, "update-ref", f"refs/sessiondag/{sid}/main", head], check=True)
    subprocess.run(["git", "-C", repo, "update-ref", "refs/sessiondag/bad+id/main", head], check=True)
    rows = {x["session_id"]: x for x in listing.list_remote(r)}
    assert set(rows) == {"s", "t1", "t2", "t3"}                 # the ref that is no session id is ignored
    assert rows["t1"]["title"] == "" and rows["t2"]["title"] == ""
    assert rows["t3"]["title"] == "" and rows["t3"]["nodes"] is None
    assert rows["s"]["title"] == "turn 0 of s"
    a.close()
