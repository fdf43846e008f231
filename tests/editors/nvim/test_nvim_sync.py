""":Sessiondag push / pull / clone (issue 23's editor commands) in a real headless Neovim against a
real daemon and a real `git daemon --enable=receive-pack` on 127.0.0.1; a push the daemon refuses for
a credential in a node goes only once the user says so."""

import json
import subprocess
import sys

from sync.git_servers import git_daemon

SECRET = "ghp_" + "Zq7Kx2Wm9Pt4Rv6Ys1Lb8Nc3Hd5Jf0Ga2TeQ4"     # looks like a GitHub token to sync/checks.py
CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


def test_push_pull_and_clone_through_a_git_daemon(nv, tmp_path):
    nv.write_script("- match: local turn\n  text: answered here\n"
                    "- match: from the other machine\n  text: answered elsewhere\n"
                    "- match: a session from elsewhere\n  text: started elsewhere\n"
                    f"- match: a secret turn\n  text: 'the token is {SECRET}'\n"
                    "- match: a turn on the clone\n  text: answered on the clone\n")
    server = git_daemon(str(tmp_path / "remote"))
    other = tmp_path / "other-state"
    env = {**nv.env, "SESSIONDAG_HOME": str(other)}
    try:
        made = subprocess.run(CLI + ["run", "a session from elsewhere", "--in-process", "--json"], cwd=nv.work,
                              env=env, capture_output=True, text=True, timeout=120)
        assert made.returncode == 0, made.stderr
        other_id = json.loads(made.stdout)["session_id"]
        pushed = subprocess.run(CLI + ["sync", "push", server.url, "--session", other_id], env=env,
                                capture_output=True, text=True, timeout=120)
        assert pushed.returncode == 0, pushed.stderr
        nv.start_daemon()
        nv.run_lua("test_sync", timeout=240, extra_env={"SD_TEST_REMOTE": server.url, "SD_TEST_OTHER_STATE": str(other),
                                                        "SD_TEST_OTHER_ID": other_id})
        refs = subprocess.run(["git", "ls-remote", server.url], capture_output=True, text=True, timeout=60).stdout
        local = [d.name for d in (nv.state / "sessions").iterdir() if not d.name.startswith(".")]
        assert sorted(local) == sorted({other_id, *[ln.split("/")[2] for ln in refs.splitlines() if "/main" in ln]})
        fsck = subprocess.run(["git", "--git-dir", server.repo, "fsck", "--strict"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr
    finally:
        server.close()
