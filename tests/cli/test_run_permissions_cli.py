"""`sessiondag run` and permissions (issue 26, item 4): on a terminal it asks (y once, a always,
n no); headless it refuses with the reason and how to allow it on stderr — in-process and through a
daemon alike; `sessions log` shows the tool calls with their status and result (`--no-tools` hides)."""

import json

import pytest

from clitest_support import Pty, env_for, sd

SCRIPT = """\
- match: please write
  tool_calls: [{name: write_file, arguments: {path: out.txt, content: hi}}]
- match: out.txt
  text: done with the file
  repeat: true
"""


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(SCRIPT)
    return p


@pytest.mark.parametrize("daemon", [False, True], ids=["in-process", "daemon"])
def test_headless_refusal_says_why_and_how_to_allow(home, workdir, script, daemon):
    if daemon:
        assert sd(["daemon", "start"], home=home).returncode == 0
    r = sd(["run", "please write", "--script", script, "--json"], home=home, cwd=workdir)
    assert r.returncode == 0, r.stderr
    assert not (workdir / "out.txt").exists()
    assert "refused write out.txt: writing files needs permission (pass --allow write" in r.stderr
    sid = json.loads(r.stdout)["session_id"]
    log = sd(["sessions", "log", sid], home=home).stdout
    tool = next(line for line in log.splitlines() if " tool " in line)
    assert "write_file(" in tool and "(error)" in tool and "PermissionDenied" in tool
    assert "[1] user: please write" in log                         # the turn numbering --edit takes
    hidden = sd(["sessions", "log", sid, "--no-tools"], home=home).stdout
    assert " tool " not in hidden and "[write_file]" in hidden


@pytest.mark.parametrize("daemon", [False, True], ids=["in-process", "daemon"])
def test_on_a_terminal_run_asks(home, workdir, script, daemon):
    if daemon:
        assert sd(["daemon", "start"], home=home).returncode == 0
    t = Pty(["run", "please write", "--script", script], env=env_for(home), cwd=workdir)
    t.expect("allow write out.txt?")
    t.send("y")
    t.expect("done with the file")
    assert t.wait() == 0, t.out
    assert (workdir / "out.txt").read_text() == "hi"
    t = Pty(["run", "-c", "please write", "--script", script], env=env_for(home), cwd=workdir)
    (workdir / "out.txt").unlink()
    t.expect("allow write out.txt?")
    t.send("n")
    assert t.wait() == 0, t.out
    assert not (workdir / "out.txt").exists()
