"""`sessiondag demo` (what `make demo` runs) leaves nothing behind unless SESSIONDAG_HOME says where."""

import os
import re

from clitest_support import env_for, sd


def test_demo_uses_a_temp_state_dir_and_removes_its_workspace(tmp_path, home):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = env_for(home, TMPDIR=tmp)
    del env["SESSIONDAG_HOME"]
    import subprocess
    from clitest_support import CLI
    r = subprocess.run(CLI + ["demo"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    state = re.search(r"state dir: (\S+)", r.stdout).group(1)
    work = re.search(r"workspace: (\S+)", r.stdout).group(1)
    assert state.startswith(str(tmp)) and work.startswith(str(tmp))
    assert "removed now" in r.stdout and "SUMMARY.md in the workspace" in r.stdout
    assert os.listdir(tmp) == []                       # both temp dirs are gone


def test_demo_keeps_sessions_in_sessiondag_home(tmp_path, home):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r = sd(["demo"], home=home, env={"TMPDIR": tmp}, timeout=300)
    assert r.returncode == 0, r.stderr
    sid = re.search(r"session:\s+(\S+)", r.stdout).group(1)
    assert (home / "sessions" / sid).is_dir() and f"pass --session {sid}" in r.stdout
    assert os.listdir(tmp) == []
