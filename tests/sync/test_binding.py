"""A pulled session binds to the local checkout of the same project (at another path) without an
opt-in; to anything else only with the opt-in, recorded as a rebind."""

import os
import subprocess
import sys

import pytest

from sessiondag.core.errors import SessionResumeError
from sessiondag.core.settings import Settings
from sessiondag.sync import identity, pull, push, remotes

from . import git_servers
from .conftest import make_session, store_at

ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def checkout(path, origin):
    os.makedirs(os.path.join(path, "pkg"))
    subprocess.run(["git", "init", "-q", path], check=True)
    subprocess.run(["git", "-C", path, "remote", "add", "origin", origin], check=True)
    return os.path.join(path, "pkg")


def test_identity_spellings_agree(tmp_path):
    one = checkout(str(tmp_path / "one"), "https://Example.com/org/proj.git")
    two = checkout(str(tmp_path / "two"), "git@example.com:org/proj")
    assert identity.identify(one) == identity.identify(two) == {"kind": "git", "remote": "example.com/org/proj",
                                                               "path": "pkg"}
    assert identity.identify(str(tmp_path)) == {"kind": "path", "path": os.path.realpath(tmp_path)}


def test_pulled_session_binds_to_the_same_project_elsewhere(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    here_a = checkout(str(tmp_path / "machine-a" / "proj"), "https://example.com/org/proj.git")
    here_b = checkout(str(tmp_path / "machine-b" / "src" / "proj"), "ssh://git@example.com/org/proj.git")
    other = str(tmp_path / "elsewhere")
    os.makedirs(other)
    a, b, c = store_at(tmp_path / "a"), store_at(tmp_path / "b"), store_at(tmp_path / "c")
    make_session(a, "s", here_a, turns=1)
    r = remotes.resolve(a.state_dir, repo)
    push.push(a, r, "s", Settings())
    assert a.session("s").graph.extra[identity.KEY]["remote"] == "example.com/org/proj"

    assert pull.clone(b, r, "s", working_dir=here_b)["working_dir"] == os.path.realpath(here_b)
    b.resume_session("s", working_dir=here_b)                  # no opt-in needed

    assert pull.clone(c, r, "s", working_dir=other)["working_dir"] == os.path.realpath(here_a)
    with pytest.raises(SessionResumeError) as e:
        c.resume_session("s", working_dir=other)
    assert e.value.reason == "working_dir_mismatch"
    for s in (a, b, c):
        s.close()

    # a third checkout of the project, never named at the clone: `sessiondag run` continues there
    here_c = checkout(str(tmp_path / "machine-c" / "proj"), "git@example.com:org/proj.git")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT_DIR, "daemon"),
                                                         os.path.join(ROOT_DIR, "clients", "python")])}
    run = subprocess.run([sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "run", "--state-dir", str(tmp_path / "c"),
                          "--session", "s", "--in-process", "continue here"], cwd=here_c, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    c = store_at(tmp_path / "c")
    s = c.session("s")
    assert s.info["working_dir"] == os.path.realpath(here_c)
    assert s.graph.extra["working_dir_rebinds"][-1]["to"] == os.path.realpath(here_c)
    c.close()
