import json
import re

import pytest

from cli_support import run_cli
from sessiondag.store import SessionStore

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "clihome"


def sid_of(out):
    m = re.search(r"session: (\S+) \(pass --session \1 to continue\)", out)
    assert m, out
    return m.group(1)


def test_run_out_of_the_box_then_continue(home, workdir):
    r = run_cli(["run", "hello there"], home=home, cwd=workdir)
    assert r.returncode == 0, r.stderr
    sid = sid_of(r.stdout)
    assert "hello there" in r.stdout and "built-in scripted reply" in r.stderr  # streamed progress
    r2 = run_cli(["run", "and again", "--session", sid, "--json"], home=home, cwd=workdir)
    assert r2.returncode == 0, r2.stderr
    res = json.loads(r2.stdout)
    assert res["session_id"] == sid and res["stop_reason"] == "end_turn"
    assert set(res) >= {"session_id", "head_id", "stop_reason", "usage"} and res["usage"]["input_tokens"] > 0
    assert sid_of(r2.stderr) == sid
    s = SessionStore(home).session(sid)
    assert [c.role for c in s.get_branch()] == ["code", "user", "llm", "user", "llm"]
    assert s.head_id == res["head_id"]


def test_resume_refused_exit_3(home, workdir, tmp_path):
    r = run_cli(["run", "one", "--json"], home=home, cwd=workdir)
    sid = json.loads(r.stdout)["session_id"]
    other = tmp_path / "elsewhere"
    other.mkdir()
    r2 = run_cli(["run", "two", "--session", sid, "--workdir", other], home=home, cwd=workdir)
    assert r2.returncode == 3 and "working_dir_mismatch" in r2.stderr
    assert len(SessionStore(home).session(sid).get_branch()) == 3  # nothing was written


@pytest.mark.parametrize("args", [[], ["run"], ["run", "x", "--allow", "delete"], ["run", "x", "--bogus"],
                                  ["run", "x", "--script", "/nonexistent.yaml"], ["run", "x", "--session", "../up"],
                                  ["run", "x", "--workdir", "/nonexistent-dir"]])
def test_usage_errors_exit_2(home, workdir, args):
    r = run_cli(args, home=home, cwd=workdir)
    assert r.returncode == 2, (r.stdout, r.stderr)


def test_openai_without_endpoint_is_a_usage_error(home, workdir):
    r = run_cli(["run", "x", "--provider", "openai"], home=home, cwd=workdir,
                env={"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "SESSIONDAG_OPENAI_BASE_URL": "",
                     "SESSIONDAG_OPENAI_API_KEY": ""})
    assert "OPENAI_BASE_URL" in r.stderr
    assert r.returncode == 2, (r.stdout, r.stderr)


def test_agent_error_exit_1_and_error_turn_committed(home, workdir, tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "partial", "error": "model exploded"}]))
    r = run_cli(["run", "x", "--script", script, "--json"], home=home, cwd=workdir)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert res["stop_reason"] == "error" and res["error"]["message"] == "model exploded"
    s = SessionStore(home).session(res["session_id"])
    n = s.get_node(res["head_id"])
    assert (n.status, n.output) == ("error", "partial") and not s.open_turn


def test_permissions_by_flag(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{name: write_file, arguments: {path: out.txt, content: made}}]\n"
                      "- text: finished\n  repeat: true\n")
    r = run_cli(["run", "write it", "--script", script], home=home, cwd=workdir)
    assert r.returncode == 0 and not (workdir / "out.txt").exists()
    assert "write_file: error" in r.stderr
    r = run_cli(["run", "write it", "--script", script, "--allow", "write"], home=home, cwd=workdir)
    assert r.returncode == 0 and (workdir / "out.txt").read_text() == "made"


def test_ask_user_in_ci_answers_file_or_typed_error(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- tool_calls: [{name: ask_user, arguments: {question: \"Which color?\"}}]\n"
                      "- match: blue\n  text: blue it is\n"
                      "- match: ask_user_unavailable\n  text: nobody answered\n"
                      "- match: AskUserUnavailableError\n  text: nobody answered\n")
    answers = tmp_path / "a.json"
    answers.write_text('{"Which color?": "blue"}')
    r = run_cli(["run", "pick", "--script", script, "--answers", answers, "--json"], home=home, cwd=workdir)
    res = json.loads(r.stdout)
    assert res["text"] == "blue it is"
    s = SessionStore(home).session(res["session_id"])
    ans = [c for c in s.graph.nodes.values() if c.role == "user" and c.input]
    assert ans[0].output == "blue" and s.get_node(ans[0].caller).name == "ask_user"
    r = run_cli(["run", "pick", "--script", script, "--json"], home=home, cwd=workdir, input="")
    assert json.loads(r.stdout)["text"] == "nobody answered"


def test_sessions_subcommands(home, workdir):
    sid = json.loads(run_cli(["run", "first", "--json"], home=home, cwd=workdir).stdout)["session_id"]
    r = run_cli(["sessions", "list", "--all"], home=home)
    assert r.returncode == 0 and sid in r.stdout
    r = run_cli(["sessions", "list", "--json"], home=home, cwd=workdir)
    assert [x["session_id"] for x in json.loads(r.stdout)] == [sid]
    r = run_cli(["sessions", "show", sid, "--json"], home=home)
    assert json.loads(r.stdout)["session_id"] == sid and json.loads(r.stdout)["turns"] == 1
    r = run_cli(["sessions", "branches", sid], home=home)
    assert r.returncode == 0 and "main" in r.stdout
    r = run_cli(["sessions", "log", sid], home=home)
    assert r.returncode == 0 and "user" in r.stdout and "first" in r.stdout
    r = run_cli(["sessions", "render", sid], home=home)
    msgs = json.loads(r.stdout)["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant"]
    r = run_cli(["sessions", "show", "no-such"], home=home)
    assert r.returncode == 1 and "no session no-such" in r.stderr
    r = run_cli(["sessions", "reset", sid, "--yes"], home=home)
    assert r.returncode == 0 and not SessionStore(home).exists(sid)
    assert run_cli(["sessions", "reset", sid, "--yes"], home=home).returncode == 1
    assert run_cli(["sessions", "frobnicate"], home=home).returncode == 2


def test_ctrl_c_cancels_the_turn_and_commits_it(home, workdir, tmp_path):
    import os
    import signal
    import subprocess
    from cli_support import CLI
    script = tmp_path / "s.yaml"
    script.write_text("- text: working on it\n  hang: true\n")
    env = dict(os.environ, SESSIONDAG_HOME=str(home))
    p = subprocess.Popen(CLI + ["run", "long", "--script", str(script), "--json"], cwd=workdir, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = ""
    while "working on it" not in seen:  # readiness: the streamed text on stderr
        ch = p.stderr.read(1)
        assert ch, "the run ended before streaming"
        seen += ch
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGINT, err
    res = json.loads(out)
    assert res["stop_reason"] == "cancelled"
    s = SessionStore(home).session(res["session_id"])
    assert s.get_node(res["head_id"]).status == "cancelled" and not s.open_turn


def _blocked_flock_pids():
    """pids waiting for a flock right now (the '->' lines of /proc/locks)."""
    out = set()
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            if "->" in parts:
                out.add(int(parts[parts.index("->") + 4]))
    return out


def test_turns_of_one_session_are_serialized_across_processes(home, workdir):
    import subprocess
    from cli_support import CLI
    from waiting import wait_until
    from processes import descendants
    from sessiondag.runtime import Runtime, run_turn, session_context
    from sessiondag.runtime.turns import turn_lock
    from sessiondag.runtime.providers.scripted import ScriptedProvider
    store = SessionStore(home)
    with session_context("shared", working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider())) as h:
        run_turn("first")
        with turn_lock(h.writer):   # a turn of this process is running
            env = dict(__import__("os").environ, SESSIONDAG_HOME=str(home))
            p = subprocess.Popen(CLI + ["run", "from the CLI", "--session", "shared", "--json"], cwd=workdir,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

            def blocked() -> bool:   # readiness: the CLI (its private daemon child) waits on the turn lock
                assert p.poll() is None, p.communicate()
                return bool(({p.pid} | descendants(p.pid)) & _blocked_flock_pids())
            wait_until(blocked, "the CLI to block on the turn lock", timeout=60)
            assert [c.output for c in h.session.get_branch() if c.role == "user"] == ["first"]
            run_turn("second, still ours")
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    users = [c.output for c in store.session("shared").get_branch() if c.role == "user"]
    assert users == ["first", "second, still ours", "from the CLI"]
    store.close()
