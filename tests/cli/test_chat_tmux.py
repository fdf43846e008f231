"""`sessiondag chat` in a real terminal (tmux) against a real daemon: streamed markdown replies, a
permission asked inline (y once, a always), a tool line collapsed into its result, Ctrl-C cancelling a
turn (committed `cancelled`), /fork and /branches, a turn run by another client streaming in live,
Ctrl-D leaving with the session line."""

import json
import os
import subprocess

import pytest

from clitest_support import CLI, env_for, sd
from sessiondag.store import SessionStore
from tmux_support import Tmux

SCRIPT = """\
- match: hello
  text: "# Greeting\\nHello from the **script**, with `code`.\\n- first point\\n"
- match: please write
  tool_calls: [{name: write_file, arguments: {path: out.txt, content: one}}]
- match: write again
  tool_calls: [{name: write_file, arguments: {path: two.txt, content: two}}]
- match: write a third
  tool_calls: [{name: write_file, arguments: {path: three.txt, content: three}}]
- match: wrote
  text: the file is written
  repeat: true
- match: hang
  text: "thinking about it"
  hang: true
- match: outside
  text: an answer for the other client
"""


@pytest.fixture
def chat(home, workdir, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text(SCRIPT)
    assert sd(["daemon", "start"], home=home).returncode == 0
    env = env_for(home)
    t = Tmux(tmp_path, CLI + ["chat", "--script", str(script)], env={k: env[k] for k in (
        "SESSIONDAG_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "PATH", "PYTHONPATH", "HOME") if k in env},
        cwd=workdir)
    try:
        t.wait_for("/help for commands", "the chat to start")
        yield t
    finally:
        t.close()


def session_of(home, workdir):
    rows = json.loads(sd(["sessions", "list", "--json"], home=home, cwd=workdir).stdout)
    assert len(rows) == 1, rows
    return rows[0]["session_id"]


def test_chat_in_a_terminal(chat, home, workdir):
    t = chat
    t.type("hello")
    s = t.wait_for("turn 1 ·", "the first turn")
    assert "Greeting" in s and "Hello from the script, with code." in s and "• first point" in s
    assert "**" not in s.split("› hello")[1]                    # markdown drawn, not shown raw

    t.type("please write")                                       # asked inline, granted once
    t.wait_for("allow write", "the permission question")
    t.type("y", enter=False)                                     # one key answers, as in other agents' TUIs
    s = t.wait_for("turn 2 ·", "the write turn")
    assert (workdir / "out.txt").read_text() == "one" and "✓ write_file(out.txt)" in s
    t.type("write again")                                        # asked again: "a" grants for the chat
    t.wait_for(lambda s: s.count("allow write") == 2, "the second permission question")
    t.type("a", enter=False)
    t.wait_for("turn 3 ·", "the second write")
    t.type("write a third")
    s = t.wait_for("turn 4 ·", "the third write, not asked")
    assert s.count("allow write") == 2 and (workdir / "three.txt").read_text() == "three"

    t.type("hang on")                                            # Ctrl-C cancels the turn
    t.wait_for("thinking about it", "the streamed start of the hanging reply")
    t.keys("C-c")
    s = t.wait_for("turn 5 · cancelled", "the cancelled turn")
    sid = session_of(home, workdir)
    store = SessionStore(home)
    try:
        head = store.session(sid).get_node(store.session(sid).head_id)
        assert head.status == "cancelled" and head.output == "thinking about it"   # committed as it was
    finally:
        store.close()

    t.type("/fork 1")                                            # a fork after turn 1
    t.wait_for("branches off after turn 1", "the fork")
    t.type("hello again")
    t.wait_for(lambda s: s.count("turn 2 ·") == 2, "the first turn of the fork")
    t.type("/branches")
    s = t.wait_for("Enter checks out", "the branch list")
    assert s.count(" turns, ") >= 2 and "* hello again" in s      # two lines of work, the fork current
    t.keys("Up", "Enter")                                        # back to the first line of work
    t.wait_for("checked out", "the checkout")
    t.type("/usage")
    s = t.wait_for("this session:", "the usage")
    assert "model calls" in s and "scripted:" in s

    # another client's turn in the same session streams in live
    r = subprocess.run(CLI + ["run", "-c", "a question from outside"], cwd=workdir, env=env_for(home),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    s = t.wait_for("their turn ended: end_turn", "the other client's turn")
    assert "an answer for the other client" in s and "a question from outside" in s

    t.keys("C-d")
    s = t.wait_for("[exited 0]", "the chat to end")
    assert f"session: {sid}" in s and "Traceback" not in s
    with open(os.path.join(home, "sessions", sid, "session.json")) as f:
        assert json.load(f)["agent_settings"]["provider"] == "scripted"


def test_the_chat_hears_the_daemon_stop_and_connects_again(chat, home, workdir):
    """`daemon stop` while the chat is open (issue 26): the chat says so (daemon/will_stop reaches
    every client) instead of failing at the next message, which starts a daemon and runs."""
    t = chat
    t.type("hello")
    t.wait_for("turn 1 ·", "the first turn")
    pid = json.loads(sd(["daemon", "status", "--json"], home=home).stdout)["pid"]
    r = sd(["daemon", "stop"], home=home, timeout=120)
    assert r.returncode == 0, r.stderr
    t.wait_for("the daemon stopped (`sessiondag daemon stop`); the next message starts it again", "the stop notice")
    t.type("hello")
    s = t.wait_for("turn 2 ·", "a turn on a new daemon")
    assert "connected to the daemon again" in s and "Traceback" not in s
    assert json.loads(sd(["daemon", "status", "--json"], home=home).stdout)["pid"] != pid
    t.keys("C-d")
    s = t.wait_for("[exited 0]", "the chat to end")
    assert "Traceback" not in s
