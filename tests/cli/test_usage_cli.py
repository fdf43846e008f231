"""`sessiondag sessions usage`, the COST column of `sessions list`, and `sessiondag run --budget-*`,
in-process and through a daemon: real subprocesses over a real state dir."""

import json

from clitest_support import sd

SCRIPT = [{"text": "", "tool_calls": [{"id": "t1", "name": "list_dir", "arguments": {"path": "."}}],
           "usage": {"input_tokens": 3000, "output_tokens": 20, "cached_tokens": 1000}},
          {"text": "done", "usage": {"input_tokens": 3100, "output_tokens": 5}}]


def _setup(tmp_path, price=True):
    (tmp_path / "wd").mkdir(exist_ok=True)
    script = tmp_path / "s.json"
    script.write_text(json.dumps(SCRIPT))
    cfg = tmp_path / "config.toml"
    cfg.write_text('[prices."scripted/scripted"]\ninput_per_mtok = 1.0\noutput_per_mtok = 10.0\n'
                   'cached_input_per_mtok = 0.5\n' if price else "")
    return script, {"SESSIONDAG_CONFIG": str(cfg)}


def _sid(out: str) -> str:
    return next(ln.split()[1] for ln in out.splitlines() if ln.startswith("session: "))


def test_sessions_usage_table_json_and_list_cost(home, tmp_path):
    script, env = _setup(tmp_path)
    r = sd(["run", "--in-process", "--script", script, "look"], home=home, cwd=tmp_path / "wd", env=env)
    assert r.returncode == 0, r.stderr
    sid = _sid(r.stdout + r.stderr)
    j = sd(["sessions", "usage", sid, "--by", "node", "--json"], home=home, env=env)
    assert j.returncode == 0, j.stderr
    res = json.loads(j.stdout)
    assert [row["input_tokens"] for row in res["rows"]] == [3000, 3100]
    # 2000 at $1 + 1000 cached at $0.5 + 20 out at $10, then 3100 at $1 + 5 at $10 (per Mtok)
    want = (2000 * 1 + 1000 * 0.5 + 20 * 10 + 3100 + 50) / 1e6
    assert abs(res["total"]["cost_usd"] - want) < 1e-12
    t = sd(["sessions", "usage", sid, "--by", "model"], home=home, env=env)
    lines = t.stdout.splitlines()
    assert lines[0].split()[:3] == ["MODEL", "CALLS", "INPUT"]
    assert lines[1].split()[0] == "scripted/scripted" and lines[-1].split()[0] == "TOTAL"
    assert lines[-1].split()[-1] == f"${want:.4f}"
    ls = sd(["sessions", "list", "--all"], home=home, env=env)
    assert "COST" in ls.stdout.splitlines()[0] and f"${want:.4f}" in ls.stdout
    # without a price: unknown, never a figure
    _, bare = _setup(tmp_path, price=False)
    t = sd(["sessions", "usage", sid], home=home, env=bare)
    assert t.stdout.splitlines()[-1].split()[-1] == f"${want:.4f}"  # priced when recorded
    r2 = sd(["run", "--in-process", "--session", sid, "--script", script, "again"], home=home,
            cwd=tmp_path / "wd", env=bare)
    assert r2.returncode == 0, r2.stderr
    t = sd(["sessions", "usage", sid, "--json"], home=home, env=bare)
    assert json.loads(t.stdout)["total"]["cost_usd"] is None
    assert sd(["sessions", "usage", sid], home=home, env=bare).stdout.splitlines()[-1].endswith("+?")


def test_run_budget_tokens_stops_mid_turn_in_process_and_through_a_daemon(home, tmp_path):
    script, env = _setup(tmp_path)
    r = sd(["run", "--in-process", "--json", "--script", script, "--budget-tokens", "3020", "look"],
           home=home, cwd=tmp_path / "wd", env=env)
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["stop_reason"] == "error" and out["error"]["code"] == "budget_exceeded"
    assert sd(["daemon", "start"], home=home, env=env).returncode == 0
    r = sd(["run", "--json", "--script", script, "--budget-usd", "0.003", "look"], home=home,
           cwd=tmp_path / "wd", env=env)
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["error"]["code"] == "budget_exceeded", out
    sid = out["session_id"]
    log = json.loads(sd(["sessions", "log", sid, "--json"], home=home, env=env).stdout)
    assert log[-1]["status"] == "error" and [x["name"] for x in log[-2]["calls"]] == ["list_dir"]
    assert sd(["run", "--budget-usd", "-1", "x"], home=home, cwd=tmp_path / "wd", env=env).returncode == 2


def test_replay_then_compare_from_the_command_line(home, tmp_path):
    script, env = _setup(tmp_path)
    r = sd(["run", "--in-process", "--json", "--script", script, "look"], home=home, cwd=tmp_path / "wd", env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    sid, head = out["session_id"], out["head_id"]
    (tmp_path / "sys.txt").write_text("You are terse.")
    alt = tmp_path / "alt.json"
    alt.write_text(json.dumps([{"text": "terse answer", "usage": {"input_tokens": 9, "output_tokens": 2}}]))
    rp = sd(["replay", sid, head, "--provider", "scripted", "--system", tmp_path / "sys.txt", "--edit", "1=hi",
             "--name", "terse", "--json"], home=home, env={**env, "SESSIONDAG_SCRIPT": str(alt)})
    assert rp.returncode == 0, rp.stderr
    new = json.loads(rp.stdout)
    assert new["text"] == "terse answer" and new["branch"] == "terse"
    assert new["node"]["metadata"]["replay"]["edits"] == [{"message_index": 1, "content": "hi"}]
    md = sd(["sessions", "compare", sid, head, new["node"]["id"]], home=home, env=env)
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("# Compare") and "First divergence: turn 0, model call 1" in md.stdout
    assert "terse answer" in md.stdout and "| input_tokens | 6100 | 3009 |" in md.stdout
    js = json.loads(sd(["sessions", "compare", sid, head, new["node"]["id"], "--format", "json"],
                       home=home, env=env).stdout)
    assert js["first_divergence"]["b"] == new["node"]["id"]
    bad = sd(["replay", sid, head, "--edit", "x"], home=home, env=env)
    assert bad.returncode == 2 and "N=TEXT" in bad.stderr
    refused = sd(["replay", sid, out["user_node_id"] if "user_node_id" in out else "#1"], home=home, env=env)
    assert refused.returncode == 1 and "cannot replay" in refused.stderr


def test_replay_a_branch_from_the_command_line(home, tmp_path):
    """`sessiondag replay ID NODE --branch`: the recorded tool result reused, the edit on every
    request; `--live-tools` runs list_dir again (after the files are put back)."""
    script, env = _setup(tmp_path)
    r = sd(["run", "--in-process", "--json", "--script", script, "look"], home=home, cwd=tmp_path / "wd", env=env)
    assert r.returncode == 0, r.stderr
    sid = json.loads(r.stdout)["session_id"]
    from sessiondag.store import SessionStore
    st = SessionStore(str(home))
    user = next(c.id for c in st.session(sid).get_branch() if c.role == "user")
    st.close()
    alt = tmp_path / "alt.json"
    alt.write_text(json.dumps(SCRIPT))
    rp = sd(["replay", sid, user, "--branch", "--provider", "scripted", "--edit", "1=look again", "--name", "again",
             "--json"], home=home, env={**env, "SESSIONDAG_SCRIPT": str(alt)})
    assert rp.returncode == 0, rp.stderr
    res = json.loads(rp.stdout)
    assert res["branch"] == "again" and res["calls"] == 2 and res["matched_tools"] == 1 and res["stopped"] is None
    assert res["files"] is None and res["mode"] == "recorded_tools"
    live = sd(["replay", sid, user, "--branch", "--live-tools", "--provider", "scripted", "--json"], home=home,
              env={**env, "SESSIONDAG_SCRIPT": str(alt)})
    assert live.returncode == 0, live.stderr
    res = json.loads(live.stdout)
    assert res["mode"] == "live_tools" and res["matched_tools"] == 0 and res["stopped"] is None
    assert res["files"] is not None and "changes" in res["files"]      # the files were put back first
    wrong = sd(["replay", sid, user, "--live-tools"], home=home, env=env)
    assert wrong.returncode == 2 and "--branch" in wrong.stderr
