"""`sessiondag sessions restore|diff|show` and `run --restore-files`, through the real CLI on real files."""

import json

from clitest_support import sd

SCRIPT = ("- match: one\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"one\\n\"}}]\n"
          "- match: two\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"two\\n\"}}]\n"
          "- match: f.txt\n  repeat: true\n  text: done\n")


def run(home, cwd, script, *args):
    r = sd(["run", *args, "--in-process", "--script", script, "--allow", "write", "--json"], home=home, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_restore_diff_undo_and_fork_with_files(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text(SCRIPT)
    r1 = run(home, workdir, script, "one")
    sid = r1["session_id"]
    (workdir / "other.txt").write_text("x" * 100)     # by another process, between the turns
    r2 = run(home, workdir, script, "two", "--session", sid)
    d = sd(["sessions", "diff", sid, r1["head_id"], r2["head_id"]], home=home)
    assert d.returncode == 0 and "-one\n+two\n" in d.stdout and "# conversation: 0 node(s) only in" in d.stdout
    dry = sd(["sessions", "restore", sid, r1["head_id"], "--dry-run"], home=home)
    assert dry.returncode == 0 and "write    f.txt" in dry.stdout and (workdir / "f.txt").read_text() == "two\n"
    out = sd(["sessions", "restore", sid, r1["head_id"]], home=home)
    assert out.returncode == 0 and "--undo" in out.stdout and (workdir / "f.txt").read_text() == "one\n"
    (workdir / "mine.txt").write_text("mine\n")
    refused = sd(["sessions", "restore", sid, "--undo"], home=home)
    assert refused.returncode == 1 and "mine.txt" in refused.stderr and (workdir / "f.txt").read_text() == "one\n"
    forced = sd(["sessions", "restore", sid, "--undo", "--force", "--json"], home=home)
    assert forced.returncode == 0 and (workdir / "f.txt").read_text() == "two\n"
    assert json.loads(forced.stdout)["files"]["undo"]["id"]
    show = json.loads(sd(["sessions", "show", sid, "--json"], home=home).stdout)
    # other.txt was stored by the second turn's snapshot (f.txt's versions by the write_file calls already)
    assert show["repo_bytes"] > 0 and show["snapshot_bytes"] >= 100 and show["workspace_bytes"] == 104
    # a retry that takes the files back to the fork point first; headless without the flag: files stay
    r3 = run(home, workdir, script, "two", "--session", sid, "--branch-from", r1["head_id"], "--restore-files")
    assert r3["stop_reason"] == "end_turn" and (workdir / "f.txt").read_text() == "two\n"
    (workdir / "f.txt").write_text("edited\n")
    r = sd(["run", "one", "--in-process", "--script", script, "--allow", "write", "--session", sid,
            "--branch-from", r1["head_id"], "--restore-files"], home=home, cwd=workdir)
    assert r.returncode == 3 and "f.txt" in r.stderr and (workdir / "f.txt").read_text() == "edited\n"
    bad = sd(["sessions", "restore", sid], home=home)
    assert bad.returncode == 2
