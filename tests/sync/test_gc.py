"""`sessiondag gc`: prunes by age and count, never a session with unpushed work unless --force,
packs what it keeps, says what it did and why (real processes, real git)."""

import os
import subprocess
import sys
import time

import orjson

from sessiondag.core.settings import Settings
from sessiondag.sync import push, remotes

from . import git_servers
from .conftest import add_turn, fsck, make_session, store_at

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]
ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gc(state, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT_DIR, "daemon"),
                                                         os.path.join(ROOT_DIR, "clients", "python")])}
    r = subprocess.run(CLI + ["gc", "--state-dir", str(state), "--json", *args], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return {v["session_id"]: v for v in orjson.loads(r.stdout)}


def _age(store, sid, days):
    """Make a session look `days` old (its last write is the newest mtime of its files)."""
    t = time.time() - days * 86400
    path = store.path_of(sid)
    for rel in ("journal.log", "session.json", "git/refs/heads", "git/HEAD"):
        os.utime(os.path.join(path, rel), (t, t))


def test_gc_prunes_old_pushed_sessions_only(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = str(tmp_path / "wd")
    os.makedirs(wd)
    a = store_at(tmp_path / "a")
    r = remotes.resolve(a.state_dir, repo)
    for sid in ("old-pushed", "old-unpushed", "old-changed", "new-one"):
        make_session(a, sid, wd, turns=2)
    push.push(a, r, "old-pushed", Settings())
    push.push(a, r, "old-changed", Settings())
    add_turn(a.session("old-changed"), "after the push")
    for sid in ("old-pushed", "old-unpushed", "old-changed"):
        _age(a, sid, 40)
    a.close()

    dry = gc(tmp_path / "a", "--older-than", "30", "--dry-run")
    assert dry["old-pushed"]["action"] == "would_remove"
    assert dry["old-unpushed"]["action"] == "kept" and "never pushed" in dry["old-unpushed"]["reason"]
    assert dry["old-changed"]["action"] == "kept" and "not pushed" in dry["old-changed"]["reason"]
    assert dry["new-one"]["action"] == "kept" and dry["new-one"]["reason"] == "recent"
    assert all(v["packed"] is None for v in dry.values())
    assert len(os.listdir(tmp_path / "a" / "sessions")) == 4

    done = gc(tmp_path / "a", "--older-than", "30")
    assert done["old-pushed"]["action"] == "removed"
    assert not os.path.exists(tmp_path / "a" / "sessions" / "old-pushed")
    for sid in ("old-unpushed", "old-changed", "new-one"):
        assert done[sid]["action"] == "kept" and done[sid]["packed"]["after"] > 0
        git_dir = str(tmp_path / "a" / "sessions" / sid / "git")
        fsck(git_dir)
        assert not [n for n in os.listdir(os.path.join(git_dir, "objects")) if len(n) == 2]   # no loose objects
    b = store_at(tmp_path / "a")
    assert len(b.session("old-changed").graph.nodes) == 7       # packed sessions still open and read
    b.close()

    forced = gc(tmp_path / "a", "--keep", "1", "--force")
    assert forced["new-one"]["action"] == "kept"
    assert {forced[s]["action"] for s in ("old-unpushed", "old-changed")} == {"removed"}
    assert os.listdir(tmp_path / "a" / "sessions") == ["new-one"]
