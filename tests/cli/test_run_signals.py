"""SIGTERM / SIGHUP / SIGINT on `sessiondag run` mid-stream: the partial answer is kept, the llm
node ends `cancelled`, the turn is committed, the exit status is 128 + the signal."""

import json
import signal
import subprocess

import pytest

from clitest_support import CLI, env_for
from hanging_openai import HangingOpenAI
from sessiondag.store import SessionStore

STREAMED = "Half of the answer, then the model goes quiet"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_mid_stream_keeps_partial_and_commits(home, workdir, sig):
    with HangingOpenAI(STREAMED) as srv:
        env = env_for(home, SESSIONDAG_OPENAI_BASE_URL=srv.base_url, SESSIONDAG_OPENAI_API_KEY="sk-test")
        p = subprocess.Popen(CLI + ["run", "explain", "--provider", "openai", "--json"], cwd=workdir, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = ""
        while STREAMED not in seen:  # readiness: the streamed text on stderr
            ch = p.stderr.read(1)
            assert ch, f"the run ended before streaming: {seen}"
            seen += ch
        p.send_signal(sig)
        out, err = p.communicate(timeout=120)
    assert p.returncode == 128 + sig, err
    res = json.loads(out)
    assert res["stop_reason"] == "cancelled"
    s = SessionStore(home).session(res["session_id"])
    node = s.get_node(res["head_id"])
    assert (node.role, node.status, node.output) == ("llm", "cancelled", STREAMED)
    # a first turn cancelled before any tool ran does not wait for the snapshot before it: its nodes
    # are committed, then the baseline and the turn's own snapshot, each in a commit of its own — and
    # an in-process run waits for those before it exits (docs/checkpoints.md)
    assert not s.open_turn and s.turn == 3
    log = subprocess.run(["git", "--git-dir", f"{s.path}/git", "log", "--format=%s"], capture_output=True, text=True)
    subjects = log.stdout.strip().splitlines()
    assert len(subjects) == 3 and "cancelled" in subjects[-1], subjects
    assert s.get_node(res["user_node_id"] if "user_node_id" in res else node.caller).metadata["checkpoint"]["id"]
