"""The model a session was started with (issue 26, items 1-3): recorded at the first turn (session
meta + session.json, no key), used by every later turn through any entry point unless that prompt
overrides it; the same command gives the same model with or without a daemon, whatever shell the
daemon was started from; an error through the daemon is the in-process one line and exit code, and a
refused prompt leaves no session behind. A real daemon, a real OpenAI-compatible server on loopback."""

import json
import os
import subprocess

from clitest_support import sd
from hanging_openai import LoopbackOpenAI
from sessiondag.store import SessionStore
from sessiondag_client import InvalidParamsError, SyncClient

KEY = "sk-client-shell-only-4242"


def openai_env(srv):
    return {"SESSIONDAG_OPENAI_BASE_URL": srv.base_url, "SESSIONDAG_OPENAI_API_KEY": KEY}


def run_json(args, **kw):
    r = sd(args + ["--json"], **kw)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout), r


def files_containing(root, needle):
    hits = []
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            try:
                if needle.encode() in open(p, "rb").read():
                    hits.append(p)
            except OSError:
                pass
    return hits


def recorded_model(home, sid):
    s = SessionStore(home).session(sid)
    info = json.load(open(os.path.join(s.path, "session.json")))
    return s.graph.extra.get("agent_settings"), info.get("agent_settings")


def check_later_turns_keep_the_model(home, workdir, srv, env):
    first, _ = run_json(["run", "first", "--provider", "openai", "--model", "fake-model"], home=home, cwd=workdir,
                        env=env)
    assert first["text"] == "from the endpoint" and srv.requests[-1]["body"]["model"] == "fake-model"
    meta, info = recorded_model(home, first["session_id"])
    assert meta == info and meta["provider"] == "openai" and meta["model"] == "fake-model"
    second, _ = run_json(["run", "-c", "second"], home=home, cwd=workdir, env=env)   # no flags
    assert second["session_id"] == first["session_id"] and second["text"] == "from the endpoint"
    assert srv.requests[-1]["body"]["model"] == "fake-model" and len(srv.requests) == 2
    third, _ = run_json(["run", "-c", "third", "--model", "other-model"], home=home, cwd=workdir, env=env)
    assert srv.requests[-1]["body"]["model"] == "other-model"                       # this prompt only
    run_json(["run", "-c", "fourth"], home=home, cwd=workdir, env=env)
    assert srv.requests[-1]["body"]["model"] == "fake-model"
    assert recorded_model(home, first["session_id"])[0]["model"] == "fake-model"
    return first["session_id"]


def test_later_turns_run_on_the_recorded_model_in_process(home, workdir):
    with LoopbackOpenAI([{"text": "from the endpoint", "repeat": True}]) as srv:
        sid = check_later_turns_keep_the_model(home, workdir, srv, openai_env(srv))
    assert not files_containing(home, KEY)                                           # never a key on disk
    log = subprocess.run(["git", "--git-dir", os.path.join(home, "sessions", sid, "git"), "log", "-p"],
                         capture_output=True, text=True).stdout
    assert '"agent_settings"' in log or "agent_settings" in log                     # in the history


def test_same_model_through_a_daemon_started_from_another_shell(home, workdir):
    assert sd(["daemon", "start"], home=home).returncode == 0     # this daemon's shell has no provider at all
    with LoopbackOpenAI([{"text": "from the endpoint", "repeat": True}]) as srv:
        sid = check_later_turns_keep_the_model(home, workdir, srv, openai_env(srv))
        assert all(r["auth"] == f"Bearer {KEY}" for r in srv.requests)
        st = json.loads(sd(["daemon", "status", "--json"], home=home).stdout)
        assert sid in st["sessions_open"]                                            # the turns ran there
        # an editor's prompt (names no provider) runs on the recorded model too, resolved in the
        # daemon, which lacks what the client's shell had: the error says which process lacks what
        with SyncClient.connect(state_dir=str(home)) as c:
            try:
                c.agent_prompt(session_id=sid, content="from the editor")
                raise AssertionError("the daemon has no openai endpoint; the prompt must be refused")
            except InvalidParamsError as e:
                assert "daemon's environment" in str(e) and "OPENAI_BASE_URL" in str(e)
    assert not files_containing(home, KEY)                                           # nor in its log


def test_profiles_of_the_client_shell_through_the_daemon(home, workdir, tmp_path):
    assert sd(["daemon", "start"], home=home).returncode == 0
    with LoopbackOpenAI([{"text": "profiled", "repeat": True}]) as srv:
        cfg = tmp_path / "config.toml"
        cfg.write_text(f'[providers.work]\nkind = "openai"\nbase_url = "{srv.base_url}"\nmodel = "work-model"\n'
                       f'api_key_env = "WORK_KEY"\n')
        env = {"SESSIONDAG_CONFIG": cfg, "WORK_KEY": KEY}
        res, _ = run_json(["run", "hello", "--provider", "work"], home=home, cwd=workdir, env=env)
        assert res["text"] == "profiled" and srv.requests[-1]["body"]["model"] == "work-model"
        res, _ = run_json(["run", "-c", "again"], home=home, cwd=workdir, env=env)
        assert res["text"] == "profiled" and len(srv.requests) == 2
        assert recorded_model(home, res["session_id"])[0] == {"provider": "work", "model": "work-model"}
        r = sd(["run", "-c", "no key here"], home=home, cwd=workdir, env={"SESSIONDAG_CONFIG": cfg})
        assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "$WORK_KEY is not set" in r.stderr


def test_a_refused_prompt_is_one_line_and_leaves_nothing(home, workdir):
    def refused():
        r = sd(["run", "--provider", "nosuch", "x"], home=home, cwd=workdir)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "unknown provider 'nosuch'" in r.stderr and "Traceback" not in r.stderr
        return r.stderr
    here = refused()
    assert sd(["daemon", "start"], home=home).returncode == 0
    assert refused() == here                                                          # the same line
    listed = sd(["sessions", "list", "--json"], home=home, cwd=workdir)
    assert json.loads(listed.stdout) == [], listed.stdout                            # nothing was created
