"""The smaller everyday defects of issue 26 (item 13): a bad `-c` flag named as typed, help that names
every provider and explains positionals, a task piped on stdin, `sessions watch` saying it started
a daemon, and a cloned session's last activity being its last message, not the clone's time."""

import json
import os
import subprocess

from clitest_support import CLI, env_for, sd
from sessiondag.store import SessionStore


def test_unknown_setting_flag_is_named_as_typed(home):
    r = sd(["-c", "nosuch=1", "config"], home=home)
    assert r.returncode == 2 and "-c nosuch='1' is not valid" in r.stderr and "=''" not in r.stderr


def test_help_names_every_provider_and_positional(home):
    run_help = sd(["run", "--help"], home=home).stdout
    assert "anthropic" in run_help and "stdin" in run_help and "machine-readable" in run_help
    log_help = sd(["sessions", "log", "--help"], home=home).stdout
    assert "id or unique prefix" in log_help and "--no-tools" in log_help


def test_a_task_piped_on_stdin(home, workdir):
    r = sd(["run", "--json"], home=home, cwd=workdir, input="the task from the pipe\n")
    assert r.returncode == 0, r.stderr
    sid = json.loads(r.stdout)["session_id"]
    s = SessionStore(home).session(sid)
    assert [c.output for c in s.get_branch() if c.role == "user"] == ["the task from the pipe"]
    r = sd(["run"], home=home, cwd=workdir, input="")
    assert r.returncode == 2 and "piped on stdin" in r.stderr


def test_watch_says_it_started_a_daemon(home, workdir):
    sid = json.loads(sd(["run", "x", "--json"], home=home, cwd=workdir).stdout)["session_id"]
    w = subprocess.Popen(CLI + ["sessions", "watch", sid], env=env_for(home), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = w.stderr.readline()
        assert "started one to follow the session" in line, line
    finally:
        w.terminate()
        w.wait(30)


def test_a_cloned_session_keeps_its_last_activity(home, workdir):
    sid = json.loads(sd(["run", "x", "--json"], home=home, cwd=workdir).stdout)["session_id"]
    s = SessionStore(home).session(sid)
    newest = max(c.created_at for c in s.graph.nodes.values() if c.id != "ROOT")
    clone = os.path.join(home, "sessions", "s-cloned0001")
    os.makedirs(clone)
    subprocess.run(["git", "clone", "-q", "--bare", os.path.join(home, "sessions", sid, "git"),
                    os.path.join(clone, "git")], check=True)
    rows = {r["session_id"]: r for r in json.loads(sd(["sessions", "list", "--json"], home=home, cwd=workdir).stdout)}
    assert "s-cloned0001" in rows, rows
    committed = int(subprocess.run(["git", "--git-dir", os.path.join(clone, "git"), "log", "-1", "--format=%ct"],
                                   capture_output=True, text=True, check=True).stdout)
    assert rows["s-cloned0001"]["last_activity"] == max(newest, committed)   # not the files' fresh mtimes
    assert rows["s-cloned0001"]["last_activity"] < os.stat(os.path.join(clone, "git", "HEAD")).st_mtime


def test_titles_reach_the_editors_through_session_list(home, workdir):
    from sessiondag_client import SyncClient
    sid = json.loads(sd(["run", "fix   the parser\nplease", "--json"], home=home, cwd=workdir).stdout)["session_id"]
    assert sd(["daemon", "start"], home=home).returncode == 0
    with SyncClient.connect(state_dir=str(home)) as c:
        rows = c.call("session/list", {"working_dir": str(workdir)})["sessions"]
        assert [(r["session_id"], r["title"]) for r in rows] == [(sid, "fix the parser please")]
        c.call("session/open", {"working_dir": str(workdir)})                 # a new one, no message yet
        assert sorted(r["title"] or "" for r in c.call("session/list", {})["sessions"]) == ["", "fix the parser please"]
    assert sd(["daemon", "stop"], home=home).returncode == 0
    assert sd(["sessions", "name", sid, "Parser work"], home=home).returncode == 0
    listed = {r["session_id"]: r["title"] for r in SessionStore(home).list_sessions()}
    assert listed[sid] == "Parser work"
