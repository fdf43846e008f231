"""Picking a session up again: list, titles, --continue, --new, prefixes, --retry, --edit, rebinds,
checkout / name / export / delete, one-line usage errors — all through the real CLI."""

import json
import os

import pytest

from clitest_support import CLI, Pty, env_for, sd
from sessiondag.store import SessionStore


def run_json(args, *, home, cwd, **kw):
    r = sd(["run", *args, "--json"], home=home, cwd=cwd, **kw)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.fixture
def two_dirs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b


def test_list_titles_newest_first_filters_and_continue(home, two_dirs):
    a, b = two_dirs
    s1 = run_json(["fix the flaky test"], home=home, cwd=a)["session_id"]
    s2 = run_json(["write the release notes"], home=home, cwd=a)["session_id"]
    s3 = run_json(["other project"], home=home, cwd=b)["session_id"]
    r = sd(["sessions", "list"], home=home, cwd=a)
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["ID", "TITLE", "LAST", "ACTIVITY", "TURNS", "STATUS", "BRANCH", "COST"]
    assert [ln.split()[0] for ln in lines[1:]] == [s2, s1]          # this dir only, newest first
    assert "write the release notes" in lines[1] and "completed" in lines[1]
    rows = json.loads(sd(["sessions", "list", "--all", "--json"], home=home, cwd=a).stdout)
    assert [r["session_id"] for r in rows] == [s3, s2, s1]
    assert rows[0]["title"] == "other project" and rows[0]["turns"] == 1 and rows[0]["working_dir"] == str(b)

    # --continue takes the most recent session of *this* dir
    res = run_json(["and the changelog", "--continue"], home=home, cwd=a)
    assert res["session_id"] == s2
    assert run_json(["more", "--continue"], home=home, cwd=b)["session_id"] == s3
    first = sd(["sessions", "list", "--json"], home=home, cwd=a)
    assert json.loads(first.stdout)[0]["turns"] == 2

    # renaming
    r = sd(["sessions", "name", s1[:8], "Flaky test hunt"], home=home)
    assert r.returncode == 0, r.stderr
    assert json.loads(sd(["sessions", "list", "--json"], home=home, cwd=a).stdout)[0]["title"] == "Flaky test hunt"
    assert "Flaky test hunt" in sd(["sessions", "show", s1], home=home).stdout


def test_continue_without_a_session_here_refuses(home, workdir):
    r = sd(["run", "x", "--continue"], home=home, cwd=workdir)
    assert r.returncode == 3 and "no session for working dir" in r.stderr


def test_unknown_session_refused_unless_new(home, workdir):
    r = sd(["run", "hello", "--session", "typo-id"], home=home, cwd=workdir)
    assert r.returncode == 3 and "no session typo-id" in r.stderr
    assert not SessionStore(home).exists("typo-id")
    res = run_json(["hello", "--session", "typo-id", "--new"], home=home, cwd=workdir)
    assert res["session_id"] == "typo-id"


def test_prefixes_everywhere_and_ambiguity(home, workdir):
    a = run_json(["one", "--session", "proj-alpha", "--new"], home=home, cwd=workdir)
    run_json(["two", "--session", "proj-beta", "--new"], home=home, cwd=workdir)
    assert run_json(["again", "--session", "proj-a"], home=home, cwd=workdir)["session_id"] == "proj-alpha"
    r = sd(["sessions", "log", "proj-"], home=home)
    assert r.returncode == 2 and "ambiguous" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    log = sd(["sessions", "log", "proj-al"], home=home).stdout
    assert a["head_id"][:12] in log                                   # node ids shown beside seqs
    r = sd(["sessions", "checkout", "proj-al", a["head_id"][:10]], home=home)
    assert r.returncode == 0, r.stderr
    assert SessionStore(home).session("proj-alpha").head_id == a["head_id"]


def test_retry_and_edit(home, workdir, tmp_path):
    bad, script = tmp_path / "bad.yaml", tmp_path / "s.yaml"
    bad.write_text("- text: half\n  error: gateway down\n")
    script.write_text("- match: deploy it\n  text: deployed\n  repeat: true\n- text: fine\n  repeat: true\n")
    failed = run_json(["deploy it", "--script", bad], home=home, cwd=workdir)
    sid = failed["session_id"]
    assert failed["stop_reason"] == "error"
    log = sd(["sessions", "log", sid], home=home).stdout
    assert "ProviderError: gateway down" in log                        # the failed node's reason
    rendered = sd(["sessions", "render", sid], home=home).stdout
    assert rendered.count("gateway down") == 1                         # an error appears once
    retried = run_json(["--retry", "--session", sid, "--script", script], home=home, cwd=workdir)
    assert retried["stop_reason"] == "end_turn" and retried["text"] == "deployed"
    s = SessionStore(home).session(sid)
    users = [c for c in s.graph.nodes.values() if c.role == "user" and c.caller == "ROOT" and c.predecessor]
    assert [u.output for u in users] == ["deploy it", "deploy it"] and users[0].predecessor == users[1].predecessor
    r = sd(["run", "--retry", "--session", sid], home=home, cwd=workdir)
    assert r.returncode == 2 and "did not fail" in r.stderr

    run_json(["second turn", "--session", sid, "--script", script], home=home, cwd=workdir)
    edited = run_json(["deploy it carefully", "--edit", "2", "--session", sid, "--script", script],
                      home=home, cwd=workdir)
    s = SessionStore(home).session(sid)
    branch = [c.output for c in s.get_branch(edited["head_id"]) if c.role == "user"]
    assert branch == ["deploy it", "deploy it carefully"]   # turn 2 redone from turn 1 of the branch
    assert len(s.list_branches()) == 3
    # branches told apart: the retry that worked is the main line, the failed try by its failure,
    # the edit by its differing message, each with the turn where it leaves the main line
    rows = {b["head_id"]: b for b in json.loads(sd(["sessions", "branches", sid, "--json"], home=home).stdout)}
    labels = sorted((b["label"], b["from_turn"]) for b in rows.values())
    assert labels == [("deploy it carefully", 1), ("failed try of turn 1 (error: gateway down)", 0),
                      ("main", None)], labels
    shown = sd(["sessions", "branches", sid], home=home).stdout
    assert "failed try of turn 1 (error: gateway down)" in shown and "from the start" in shown
    assert "from turn 1" in shown and " fork " in shown
    r = sd(["run", "x", "--edit", "9", "--session", sid], home=home, cwd=workdir)
    assert r.returncode == 2 and "has 2 turn(s)" in r.stderr


@pytest.mark.parametrize("through", ["in-process", "daemon"])
def test_a_retry_that_worked_becomes_the_main_line(home, workdir, tmp_path, through):
    """Issue 26, 11: after `--retry` the failed branch used to stay `main`."""
    bad, good = tmp_path / "bad.yaml", tmp_path / "good.yaml"
    bad.write_text("- text: half\n  error: gateway down\n")
    good.write_text("- text: fine\n  repeat: true\n")
    if through == "daemon":
        assert sd(["daemon", "start"], home=home).returncode == 0
    sid = run_json(["hello", "--script", good], home=home, cwd=workdir)["session_id"]
    failed = run_json(["deploy it", "--session", sid, "--script", bad], home=home, cwd=workdir)

    def branches():
        return {b["head_id"]: b for b in json.loads(sd(["sessions", "branches", sid, "--json"], home=home).stdout)}
    assert [h for h, b in branches().items() if b["main"]] == [failed["head_id"]]
    retried = run_json(["--retry", "--session", sid, "--script", good], home=home, cwd=workdir)
    assert retried["stop_reason"] == "end_turn"
    rows = branches()
    assert [h for h, b in rows.items() if b["main"]] == [retried["head_id"]]
    assert rows[failed["head_id"]]["label"] == "failed try of turn 2 (error: gateway down)"
    assert rows[failed["head_id"]]["from_turn"] == 1
    if through == "daemon":
        from sessiondag_client import SyncClient
        with SyncClient.connect(state_dir=str(home)) as c:   # what editors read: the same main line
            got = c.call("session/list_branches", {"session_id": sid})["branches"]
        assert [b["head_id"] for b in got if b["main"]] == [retried["head_id"]]
        # and the same labels (issue 26: the editors showed "fork <id>"): one function labels both
        assert {b["head_id"]: (b["label"], b["from_turn"], b["turns"]) for b in got} == {
            h: (b["label"], b["from_turn"], b["turns"]) for h, b in rows.items()}
        assert (got_failed := next(b for b in got if b["head_id"] == failed["head_id"]))["turns"] == 2
        assert got_failed["label"] == "failed try of turn 2 (error: gateway down)"


def test_turn_numbers_of_the_log_name_branch_points(home, workdir, tmp_path):
    """Issue 26, 10: `--branch-from N` and `sessions checkout ID N` take the [N] `sessions log` shows."""
    script = tmp_path / "s.yaml"
    script.write_text("- text: fine\n  repeat: true\n")
    sid = run_json(["one", "--script", script], home=home, cwd=workdir)["session_id"]
    for text in ("two", "three"):
        run_json([text, "--session", sid, "--script", script], home=home, cwd=workdir)
    log = sd(["sessions", "log", sid], home=home).stdout
    assert "[1] user: one" in log and "[3] user: three" in log, log
    forked = run_json(["two again", "--branch-from", "1", "--session", sid, "--script", script],
                      home=home, cwd=workdir)
    s = SessionStore(home).session(sid)
    assert [c.output for c in s.get_branch(forked["head_id"]) if c.role == "user"] == ["one", "two again"]
    listed = json.loads(sd(["sessions", "list", "--json"], home=home, cwd=workdir).stdout)
    assert listed[0]["turns"] == 2          # the current branch's turns: the numbering log shows, not all 4
    end_of_1 = [c for c in s.get_branch(forked["head_id"]) if c.output == "two again"][0].predecessor
    r = sd(["sessions", "checkout", sid, "1"], home=home)      # the end of turn 1 of the current branch
    assert r.returncode == 0, r.stderr
    assert SessionStore(home).session(sid).head_id == end_of_1 != forked["head_id"]
    r = sd(["run", "x", "--branch-from", "7", "--session", sid], home=home, cwd=workdir)
    assert r.returncode == 2 and "has 1 turn(s)" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_working_dir_mismatch_and_rebind(home, two_dirs):
    a, b = two_dirs
    sid = run_json(["start here"], home=home, cwd=a)["session_id"]
    r = sd(["run", "go on", "--session", sid], home=home, cwd=b)
    assert r.returncode == 3 and "--allow-working-dir-mismatch" in r.stderr
    res = run_json(["go on", "--session", sid, "--allow-working-dir-mismatch"], home=home, cwd=b)
    assert res["stop_reason"] == "end_turn"
    s = SessionStore(home).session(sid)
    assert s.info["working_dir"] == str(b)
    rebinds = s.graph.extra["working_dir_rebinds"]
    assert [(x["from"], x["to"]) for x in rebinds] == [(str(a), str(b))] and not s.open_turn
    assert run_json(["and on", "--session", sid], home=home, cwd=b)["stop_reason"] == "end_turn"


def test_export_and_delete(home, workdir, tmp_path):
    res = run_json(["summarize the notes"], home=home, cwd=workdir)
    sid = res["session_id"]
    md = sd(["sessions", "export", sid], home=home).stdout
    assert md.startswith("# summarize the notes\n") and "## User" in md and "## Assistant" in md
    jl = sd(["sessions", "export", sid, "--format", "jsonl"], home=home).stdout.splitlines()
    nodes = [json.loads(x) for x in jl]
    assert [n["seq"] for n in nodes] == sorted(n["seq"] for n in nodes) and nodes[0]["id"] == "ROOT"
    assert len(nodes) == len(SessionStore(home).session(sid).graph.nodes)
    r = sd(["sessions", "delete", sid], home=home, input="")
    assert r.returncode == 2 and "--yes" in r.stderr and SessionStore(home).exists(sid)
    r = sd(["sessions", "delete", sid, "--yes"], home=home)
    assert r.returncode == 0 and not SessionStore(home).exists(sid)
    r = sd(["sessions", "delete", sid, "--yes"], home=home)
    assert r.returncode == 1 and f"no session {sid}" in r.stderr


def test_delete_goes_through_the_daemon_that_holds_the_session(home, workdir):
    from sessiondag_client import SyncClient
    sid = run_json(["delete me later"], home=home, cwd=workdir)["session_id"]
    assert sd(["daemon", "start"], home=home).returncode == 0
    assert run_json(["a turn through the daemon", "--session", sid], home=home, cwd=workdir)["session_id"] == sid
    with SyncClient.connect(state_dir=str(home)) as c:
        c.subscribe(sid)                                        # an editor following it
        r = sd(["sessions", "delete", sid, "--yes"], home=home)
        assert r.returncode == 0 and "through the daemon" in r.stdout, r.stderr
        note = c.next_notification("session/did_delete", timeout=60)
        assert note["params"]["session_id"] == sid
    assert not SessionStore(home).exists(sid)
    assert sid not in json.loads(sd(["daemon", "status", "--json"], home=home).stdout)["sessions_open"]


@pytest.mark.parametrize("args", [
    ["run", "x", "--branch-from", "nope"], ["run", "x", "--continue", "--session", "s"], ["run"],
    ["run", "x", "--retry", "--edit", "1", "--session", "s"], ["run", "x", "--script", "f", "--provider", "openai"],
    ["sessions", "log"], ["sessions", "show", "../x"], ["daemon", "bogus"], ["resume", "--bogus-flag-xyz", "-Z"], ["bogus"],
])
def test_usage_errors_are_one_line_exit_2(home, workdir, args):
    if args[:2] == ["run", "x"] and "--branch-from" in args:
        run_json(["first", "--session", "bf", "--new"], home=home, cwd=workdir)
        args = args + ["--session", "bf"]
    r = sd(args, home=home, cwd=workdir)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


def test_state_dir_option_everywhere(tmp_path, workdir, home):
    other = tmp_path / "elsewhere-state"
    sid = run_json(["hi", "--state-dir", other], home=home, cwd=workdir)["session_id"]
    assert not SessionStore(home).exists(sid)
    for args, want in ((["sessions", "list", "--all"], sid), (["sessions", "show", sid], sid),
                       (["sessions", "log", sid], "Task: hi"), (["sessions", "export", sid], sid),
                       (["daemon", "status"], str(other))):
        r = sd(args + ["--state-dir", other], home=home)
        assert r.returncode in (0, 3) and want in r.stdout, (args, r.stdout, r.stderr)


def test_resume_lists_and_exits_2_without_a_terminal(home, workdir):
    run_json(["first task"], home=home, cwd=workdir)
    r = sd(["resume"], home=home, cwd=workdir, input="")
    assert r.returncode == 2 and "first task" in r.stdout and "TITLE" in r.stdout
    assert "not a terminal" in r.stderr


def test_resume_picks_then_chats(home, workdir):
    older = run_json(["older task"], home=home, cwd=workdir)["session_id"]
    run_json(["newer task"], home=home, cwd=workdir)
    t = Pty(["resume"], env=env_for(home), cwd=workdir)
    t.expect("session [1-2")
    assert t.out.index("newer task") < t.out.index("older task")
    t.send("2")
    t.expect("/help for commands")                  # the chat, on the picked session
    os.write(t.master, b"continue the older one\r")
    t.expect_after("turn 2 ", "›")                  # the prompt is back
    os.write(t.master, b"\x04")                     # Ctrl-D leaves
    assert t.wait() == 0, t.out
    answer = "Task: continue the older one"
    assert t.out.count(answer) == 1, t.out        # streamed once; not printed a second time
    assert f"session: {older}" in t.out
    s = SessionStore(home).session(older)
    assert [c.output for c in s.get_branch() if c.role == "user"] == ["older task", "continue the older one"]


@pytest.mark.parametrize("key", ["C-c", "C-d"])
def test_resume_picker_leaves_quietly(home, workdir, tmp_path, key):
    from tmux_support import Tmux
    run_json(["a task"], home=home, cwd=workdir)
    env = env_for(home)
    t = Tmux(tmp_path, CLI + ["resume"], env={k: env[k] for k in ("SESSIONDAG_HOME", "XDG_RUNTIME_DIR", "PATH",
                                                                   "PYTHONPATH", "HOME") if k in env}, cwd=workdir)
    try:
        t.wait_for("session [1-1", "the picker")
        t.keys(key)
        s = t.wait_for("[exited 1]", "resume to leave")
    finally:
        t.close()
    assert "Traceback" not in s and "KeyboardInterrupt" not in s
    assert "\n[exited 1]" in s                      # the shell prompt starts on a line of its own


def test_path_remap_setting_rebinds_on_purpose(home, two_dirs, tmp_path):
    a, b = two_dirs
    sid = run_json(["from the old checkout"], home=home, cwd=a)["session_id"]
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[working_dirs]\nremap = {{ "{a}" = "{b}" }}\n')
    res = run_json(["from the new checkout", "--session", sid], home=home, cwd=b, env={"SESSIONDAG_CONFIG": cfg})
    assert res["stop_reason"] == "end_turn"
    s = SessionStore(home).session(sid)
    assert s.info["working_dir"] == str(b)
    assert [(x["from"], x["to"]) for x in s.graph.extra["working_dir_rebinds"]] == [(str(a), str(b))]


def test_delete_asks_in_a_terminal(home, workdir):
    sid = run_json(["maybe delete me"], home=home, cwd=workdir)["session_id"]
    t = Pty(["sessions", "delete", sid], env=env_for(home))
    t.expect("? [y/N]")
    t.send("n")
    assert t.wait() == 1 and SessionStore(home).exists(sid)
    t = Pty(["sessions", "delete", sid[:8]], env=env_for(home))
    t.expect("(maybe delete me)? [y/N]")
    t.send("y")
    assert t.wait() == 0 and not SessionStore(home).exists(sid)


def test_list_many_sessions_under_a_low_fd_limit(home, workdir):
    """Listing summarizes every session: each is closed again, so 300 sessions fit in 128 fds."""
    import resource
    import subprocess
    from clitest_support import CLI
    store = SessionStore(home)
    for i in range(300):
        store.start_session(f"bulk-{i:03d}", working_dir=workdir)
        store.close()

    def low_fds():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
    r = subprocess.run(CLI + ["sessions", "list", "--json"], cwd=workdir, env=env_for(home), capture_output=True,
                       text=True, timeout=300, preexec_fn=low_fds)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(r.stdout)
    assert len(rows) == 300 and all(x["readable"] for x in rows), [x for x in rows if not x["readable"]][:1]


def test_name_a_branch_and_log_json_carries_the_failure(home, workdir, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- text: oops\n  error: quota exceeded\n")
    res = run_json(["try", "--script", bad], home=home, cwd=workdir)
    sid = res["session_id"]
    r = sd(["sessions", "name", sid, "--branch", f"#{SessionStore(home).session(sid).get_node(res['head_id']).seq}",
            "first-try"], home=home)
    assert r.returncode == 0, r.stderr
    assert SessionStore(home).session(sid).list_branches()[0].name == "first-try"
    rows = json.loads(sd(["sessions", "log", sid, "--json"], home=home).stdout)
    assert rows[-1]["status"] == "error" and rows[-1]["error"] == {"type": "ProviderError", "message": "quota exceeded"}
    show = json.loads(sd(["sessions", "show", sid, "--json"], home=home).stdout)
    assert show["title"] == "try" and show["turns"] == 1
