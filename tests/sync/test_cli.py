"""`sessiondag sync …` as a person or a CI job runs it (a real process per command)."""

import os
import subprocess
import sys

import orjson

from . import git_servers

CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]
ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sd(*args, cwd=None, check=True):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.join(ROOT_DIR, "daemon"),
                                                         os.path.join(ROOT_DIR, "clients", "python")])}
    r = subprocess.run(CLI + list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_cli_round_trip(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = tmp_path / "wd"
    wd.mkdir()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    sd("run", "--state-dir", a, "--in-process", "--new", "--session", "ci-1", "hello from ci", cwd=wd)
    sd("sync", "remote", "add", "team", repo, "--default", "--state-dir", a)
    dry = orjson.loads(sd("sync", "push", "--session", "ci-1", "--dry-run", "--json", "--state-dir", a).stdout)
    assert dry[0]["status"] == "dry_run" and dry[0]["bytes"] > 0
    assert "refs/sessiondag" not in subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True,
                                                   text=True).stdout
    sd("run", "--state-dir", a, "--in-process", "--new", "--session", "ci-2", "pushed by the run", "--push", repo,
       cwd=wd)
    assert "refs/sessiondag/ci-2/main" in subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True,
                                                         text=True).stdout
    r = sd("run", "--state-dir", a, "--in-process", "--session", "ci-2", "again", "--push",
           f"git://127.0.0.1:{git_servers.free_port()}/x.git", cwd=wd, check=False)
    assert r.returncode == 4 and "sync_unreachable" in r.stderr
    sd("sync", "push", "--all", "--state-dir", a)
    rows = orjson.loads(sd("sync", "list", repo, "--json", "--state-dir", b).stdout)
    assert sorted(r["session_id"] for r in rows) == ["ci-1", "ci-2"]
    assert {r["session_id"]: r["title"] for r in rows}["ci-1"] == "hello from ci"
    out = sd("sync", "clone", repo, "ci-1", "--here", str(wd), "--state-dir", b).stdout
    assert "cloned ci-1" in out
    sd("run", "--state-dir", b, "--in-process", "--session", "ci-1", "and more from the laptop", cwd=wd)
    sd("sync", "push", repo, "--session", "ci-1", "--state-dir", b)
    pulled = orjson.loads(sd("sync", "pull", "--working-dir", str(wd), "--json", "--state-dir", a).stdout)
    assert pulled[0]["status"] == "fast_forward" and pulled[0]["added"] > 0
    # a refusal: typed on stderr and in --json, exit 1
    r = sd("sync", "push", f"git://127.0.0.1:{git_servers.free_port()}/x.git", "--session", "ci-1", "--json",
           "--state-dir", a, check=False)
    assert r.returncode == 1 and "sync_unreachable" in r.stderr
    assert orjson.loads(r.stdout)["error"]["code"] == "sync_unreachable"


def test_push_all_reports_each_refusal_and_pushes_the_rest(tmp_path):
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = tmp_path / "wd"
    wd.mkdir()
    a = str(tmp_path / "a")
    sd("run", "--state-dir", a, "--in-process", "--new", "--session", "clean", "nothing secret", cwd=wd)
    sd("run", "--state-dir", a, "--in-process", "--new", "--session", "leaky",
       "my token is ghp_" + "Zz9Yy8Xx7Ww6" * 3, cwd=wd)
    r = sd("sync", "push", repo, "--all", "--json", "--state-dir", a, check=False)
    assert r.returncode == 1
    rows = {x["session_id"]: x for x in orjson.loads(r.stdout)}
    assert rows["clean"]["status"] == "pushed"
    assert rows["leaky"]["error"]["code"] == "secret_in_session"
    refs = subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True, text=True).stdout
    assert "refs/sessiondag/clean/main" in refs and "leaky" not in refs


def test_cli_push_commits_what_a_finished_turn_left_first(tmp_path):
    """`sync push` sends a record acknowledged after the last commit (made here in-process, then the
    store closed, as a daemon or a framework would leave it)."""
    from sessiondag import Call
    from sessiondag.store import SessionStore
    from sessiondag.sync import pull, remotes
    repo = git_servers.bare_repo(str(tmp_path / "sessions.git"))
    wd = tmp_path / "wd"
    wd.mkdir()
    a = SessionStore(str(tmp_path / "a"))
    a.open_session("p-1", working_dir=str(wd))
    s = a.session("p-1")
    u = s.append(Call("user", "alice", output="hello", predecessor="ROOT"))
    s.commit_turn()
    late = s.append(Call("code", "note", output="written after the commit", caller=u.id))
    a.close()
    sd("sync", "push", repo, "--session", "p-1", "--state-dir", str(tmp_path / "a"))
    b = SessionStore(str(tmp_path / "b"))
    try:
        pull.clone(b, remotes.resolve(b.state_dir, repo), "p-1", working_dir=str(wd))
        assert b.session("p-1").graph.nodes[late.id].output == "written after the commit"
    finally:
        b.close()
