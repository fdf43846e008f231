"""Live for every watcher: `sessiondag run` goes through the running daemon, every subscriber gets the
turn's progress (text deltas, turn started / committed), `sessions watch` prints it; the output and
exit codes match an in-process run; the status line shows on a terminal only."""

import json
import re
import signal
import subprocess

import pytest

from clitest_support import CLI, Pty, env_for, sd
from sessiondag.store import SessionStore
from sessiondag_client import SyncClient


def _line_until(stream, text):
    seen = ""
    while text not in seen:
        ch = stream.read(1)
        assert ch, f"EOF before {text!r}: {seen}"
        seen += ch
    return seen


def test_run_through_daemon_every_watcher_follows(home, workdir):
    first = json.loads(sd(["run", "start the work", "--json"], home=home, cwd=workdir).stdout)
    sid = first["session_id"]
    assert sd(["daemon", "start"], home=home).returncode == 0
    watcher = subprocess.Popen(CLI + ["sessions", "watch", sid[:10], "--turns", "1"], env=env_for(home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _line_until(watcher.stdout, f"watching {sid}")
        with SyncClient.connect(state_dir=str(home)) as c:
            c.subscribe(sid)
            r = sd(["run", "continue the work", "--session", sid, "--json"], home=home, cwd=workdir)
            assert r.returncode == 0, r.stderr
            res = json.loads(r.stdout)
            kinds, deltas = [], []
            while "turn_committed" not in kinds:
                n = c.next_notification("agent/did_update", timeout=60)["params"]
                assert n["session_id"] == sid
                kinds.append(n["kind"])
                if n["kind"] == "text_delta":
                    deltas.append(n["delta"])
                if n["kind"] == "turn_committed":
                    assert n["result"]["head_id"] == res["head_id"] and n["result"]["usage"] == res["usage"]
            assert kinds[0] == "turn_started" and "node_appended" in kinds and "turn_finished" in kinds
            assert "".join(deltas) == res["text"]
        out, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            watcher.kill()
    assert watcher.returncode == 0, err
    assert "turn started by" in out and "user: continue the work" in out
    assert f"assistant: {res['text']}" in out and "turn committed: end_turn" in out
    assert out.count(res["text"]) == 1
    s = SessionStore(home).session(sid)
    assert [c.output for c in s.get_branch() if c.role == "user"] == ["start the work", "continue the work"]


def _normalize(text, sid):
    return re.sub(r"[0-9a-f]{24}", "<node>", text.replace(sid, "<sid>"))


@pytest.mark.parametrize("script_text,code", [
    ("- text: all good\n", 0),
    ("- text: half\n  error: upstream 502\n", 1),
])
def test_same_output_and_exit_codes_in_process_and_through_the_daemon(home, workdir, tmp_path, script_text, code):
    script = tmp_path / "s.yaml"
    script.write_text(script_text)
    local = sd(["run", "do it", "--script", script, "--session", "one", "--new"], home=home, cwd=workdir)
    assert sd(["daemon", "start"], home=home).returncode == 0
    remote = sd(["run", "do it", "--script", script, "--session", "two", "--new"], home=home, cwd=workdir)
    assert local.returncode == remote.returncode == code, (local.stderr, remote.stderr)
    assert _normalize(local.stdout, "one") == _normalize(remote.stdout, "two")
    assert _normalize(local.stderr, "one") == _normalize(remote.stderr, "two")
    st = json.loads(sd(["daemon", "status", "--json"], home=home).stdout)
    assert "two" in st["sessions_open"] and "one" not in st["sessions_open"]   # the second ran in the daemon
    for sid in ("one", "two"):
        s = SessionStore(home).session(sid)
        assert [(c.role, c.status) for c in s.get_branch()][-2:] == \
            [("user", "completed"), ("llm", "completed" if code == 0 else "error")]
        assert not s.open_turn


def hanging_run_through_a_daemon(home, workdir, tmp_path) -> subprocess.Popen:
    """A daemon, and a `run` through it whose model streams "thinking hard" then hangs."""
    script = tmp_path / "s.yaml"
    script.write_text("- text: thinking hard\n  hang: true\n")
    assert sd(["daemon", "start"], home=home).returncode == 0
    p = subprocess.Popen(CLI + ["run", "long", "--script", str(script), "--json"], cwd=workdir, env=env_for(home),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _line_until(p.stderr, "thinking hard")
    return p


def test_sigterm_through_the_daemon_commits_a_cancelled_turn(home, workdir, tmp_path):
    p = hanging_run_through_a_daemon(home, workdir, tmp_path)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    res = json.loads(out)
    assert res["stop_reason"] == "cancelled"
    s = SessionStore(home).session(res["session_id"])
    n = s.get_node(res["head_id"])
    assert (n.status, n.output) == ("cancelled", "thinking hard") and not s.open_turn


def test_daemon_stop_cancels_a_running_turn_and_stops(home, workdir, tmp_path):
    """`daemon stop` while a turn runs: the turn is cancelled and committed, its client answered, and
    the daemon stops without waiting for the model (issue 26, item 7)."""
    p = hanging_run_through_a_daemon(home, workdir, tmp_path)
    try:
        stop = sd(["daemon", "stop"], home=home, timeout=120)
        assert stop.returncode == 0 and "stopped pid=" in stop.stdout
        assert "still running" not in stop.stderr, stop.stderr        # it did not wait for the turn
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    res = json.loads(out)
    assert p.returncode == 1 and res["stop_reason"] == "cancelled", err
    assert "cancelled from elsewhere" in err and "--retry" in err, err    # not a silent exit 1
    # the run subscribed to nothing, yet hears why (daemon/will_stop goes to every client)
    assert "the daemon is stopping (`sessiondag daemon stop`): the turn is cancelled" in err, err
    s = SessionStore(home).session(res["session_id"])
    head = s.get_node(s.head_id)
    assert (head.status, head.output) == ("cancelled", "thinking hard") and not s.open_turn


def test_status_line_only_on_a_terminal(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{name: list_dir, arguments: {path: .}}]\n- text: listed it\n")
    t = Pty(["run", "look", "--script", script], env=env_for(home), cwd=workdir)
    assert t.wait() == 0, t.out
    assert "model scripted ·" in t.out and " in / " in t.out and "\x1b[K" in t.out
    assert t.out.count("listed it") == 1
    t = Pty(["run", "look", "--script", script, "--json"], env=env_for(home), cwd=workdir)
    assert t.wait() == 0, t.out
    assert "\x1b[K" not in t.out and "model scripted ·" not in t.out
    r = sd(["run", "look", "--script", script], home=home, cwd=workdir)
    assert r.returncode == 0 and "\x1b[K" not in r.stderr and "model scripted ·" not in r.stderr
    assert r.stdout.startswith("listed it\n")


def test_status_shows_when_a_stream_stalls_mid_line(home, workdir, tmp_path):
    """The model streamed half a line and went silent: the status shows after the text (cursor saved
    and restored), where before it waited for a line start that never came (issue 26, item 5)."""
    script = tmp_path / "s.yaml"
    script.write_text("- text: half a line\n  hang: true\n")
    t = Pty(["run", "stall", "--script", script], env=env_for(home), cwd=workdir)
    t.expect("half a line")
    t.expect_after("half a line", "model scripted ·")
    assert "half a line\x1b7" in t.out                # drawn after the text, on its line
    t.proc.send_signal(signal.SIGINT)
    assert t.wait() == 128 + signal.SIGINT, t.out


def test_through_the_daemon_questions_and_permissions_are_answered_here(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{name: ask_user, arguments: {question: \"Which color?\"}}]\n"
                      "- match: blue\n  tool_calls: [{name: write_file, arguments: {path: out.txt, content: blue}}]\n"
                      "- text: wrote it\n  repeat: true\n")
    answers = tmp_path / "a.json"
    answers.write_text('{"Which color?": "blue"}')
    assert sd(["daemon", "start"], home=home).returncode == 0
    r = sd(["run", "pick", "--script", script, "--answers", answers, "--json"], home=home, cwd=workdir)
    assert r.returncode == 0 and not (workdir / "out.txt").exists()     # write refused: no --allow
    assert "write_file: error" in r.stderr
    r = sd(["run", "pick", "--script", script, "--answers", answers, "--allow", "write", "--json"], home=home,
           cwd=workdir)
    assert r.returncode == 0 and (workdir / "out.txt").read_text() == "blue"
    sid = json.loads(r.stdout)["session_id"]
    assert sid in json.loads(sd(["daemon", "status", "--json"], home=home).stdout)["sessions_open"]


def test_watch_follows_an_in_process_run_through_the_store(home, workdir):
    sid = json.loads(sd(["run", "first", "--json"], home=home, cwd=workdir).stdout)["session_id"]
    watcher = subprocess.Popen(CLI + ["sessions", "watch", sid], env=env_for(home), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        _line_until(watcher.stdout, f"watching {sid}")
        r = sd(["run", "written by another process", "--session", sid, "--in-process"], home=home, cwd=workdir)
        assert r.returncode == 0, r.stderr
        seen = _line_until(watcher.stdout, "Task: written by another process")
        assert "user: written by another process" in seen
        watcher.send_signal(signal.SIGINT)
        assert watcher.wait(timeout=60) == 0
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait()


def test_sub_agents_through_the_daemon_are_waited_for_like_in_process(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- match: delegate\n  tool_calls: [{name: spawn_agent, arguments: {task: count the files, name: counter}}]\n"
                      "- match: count the files\n  text: there are none\n"
                      "- match: spawned sub-agent\n  text: the counter is on it\n"
                      "- match: finished\n  text: the counter says there are none\n")
    local = sd(["run", "delegate it", "--script", script, "--session", "one", "--new"], home=home, cwd=workdir)
    assert sd(["daemon", "start"], home=home).returncode == 0
    remote = sd(["run", "delegate it", "--script", script, "--session", "two", "--new"], home=home, cwd=workdir)
    assert local.returncode == remote.returncode == 0, (local.stderr, remote.stderr)
    for r in (local, remote):
        assert "[follow-up]" in r.stderr and "the counter says there are none" in r.stderr
    for sid in ("one", "two"):
        s = SessionStore(home).session(sid)
        assert s.get_node(s.head_id).output == "the counter says there are none" and not s.open_turn
