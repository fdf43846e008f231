"""The Neovim plugin (editors/nvim) in a real headless Neovim 0.11.4 against a real daemon subprocess
with the scripted provider. Each test runs one lua/test_*.lua file (see nvim_support.py)."""

import os
import subprocess

from nvim_support import PLUGIN, REPO
from waiting import wait_until


def test_lua_unit(nv, monkeypatch):
    """Pure Lua parts: chat rows and folds, the branch tree, JSON pretty printing, the socket path
    the daemon itself would choose for the state dir."""
    from sessiondag.rpc.transports import default_socket_path
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(nv.runtime))
    nv.state.mkdir()
    nv.run_lua("test_unit", extra_env={"SD_TEST_SOCKET_EXPECTED": default_socket_path(str(nv.state))})


STREAM_SCRIPT = ("- match: story\n  text: Looking around first.\n"
                 "  tool_calls: [{name: list_dir, arguments: {path: .}}]\n"
                 "- match: notes.txt\n  text: The quick brown fox jumps over the lazy dog. "
                 "The quick brown fox jumps over the lazy dog.\n"
                 "- match: hang please\n  text: waiting on the model\n  hang: true\n")


def test_prompt_streams_into_chat_with_auto_started_daemon(nv):
    """The streamed reply, tool calls as folds, <C-c> cancels; no daemon runs: the plugin starts one."""
    nv.write_script(STREAM_SCRIPT)
    (nv.work / "notes.txt").write_text("hi\n")
    nv.run_lua("test_chat_stream")
    assert (nv.state / "daemon.pid").exists()
    # started as every client starts it (`sessiondag daemon start`): logging where `daemon logs` reads
    import json
    pid = json.loads((nv.state / "daemon.pid").read_text())
    assert pid["log"] == str(nv.state / "daemon.log") and "ready pid=" in (nv.state / "daemon.log").read_text()
    assert not list(nv.runtime.rglob("*.log"))


def test_prompt_streams_over_stdio_transport(nv):
    """transport = "stdio": a private `sessiondag serve --stdio` child (vim.lsp.rpc.start)."""
    nv.write_script(STREAM_SCRIPT)
    (nv.work / "notes.txt").write_text("hi\n")
    nv.run_lua("test_chat_stream", extra_env={"SD_TEST_TRANSPORT": "stdio"})
    assert not (nv.state / "daemon.pid").exists()
    # Neovim is gone: so is its private daemon (a working-dir watcher's thread kept 5 of 12 alive)
    wait_until(lambda: not _serving(nv.state), lambda: f"the stdio daemon to exit: {_serving(nv.state)}")


def _serving(state) -> list[int]:
    """Pids of `sessiondag serve` processes for the state dir `state`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and os.fsencode(str(state)) in argv:
            found.append(int(pid))
    return found


def test_permission_answered_through_vim_ui_select(nv):
    nv.write_script("- match: write it\n  repeat: true\n  text: writing\n"
                    "  tool_calls: [{name: write_file, arguments: {path: out.txt, content: v1}}]\n"
                    "- match: permission\n  text: refused by the user\n"
                    "- match: wrote\n  text: written\n"
                    "- match: anything else\n  text: nothing else\n")
    nv.start_daemon()
    nv.run_lua("test_permission")
    assert (nv.work / "out.txt").read_text() == "v1"


def test_fork_appears_in_branches_buffer(nv):
    nv.write_script("- match: first question\n  text: first answer\n"
                    "- match: second question\n  text: second answer\n"
                    "- match: edited question\n  text: edited answer\n")
    nv.start_daemon()
    nv.run_lua("test_fork")


def test_other_process_run_appears_live_and_reconnect(nv, tmp_path):
    nv.write_script("- match: after restart\n  text: still here\n")
    live = tmp_path / "live.yaml"
    # the terminal's run is the session's first turn: its script is the session's recorded model, so
    # the plugin's turn after the restart runs on it too
    live.write_text("- match: after restart\n  text: still here\n- text: thinking about it\n  hang: true\n")
    nv.start_daemon()
    nv.run_lua("test_live", extra_env={"SD_TEST_LIVE_SCRIPT": str(live)})


def test_checkhealth_passes(nv):
    nv.start_daemon()
    nv.run_lua("test_health")


def test_ask_user_retry_compact_render_log_sessions_unbind(nv):
    nv.write_script("- match: pick a color\n"
                    "  tool_calls: [{name: ask_user, arguments: {question: color, options: [red, green]}}]\n"
                    "- match: green\n  text: green it is\n"
                    "- match: please fail\n  text: partial\n  error: boom\n"
                    "- match: please fail\n  text: recovered\n")
    nv.start_daemon()
    nv.run_lua("test_views")


def test_socket_path_beyond_the_af_unix_limit(nv, tmp_path):
    """A configured socket path longer than 107 bytes is reached through /proc/self/fd/<dir fd>/<name>."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    sock = str(deep / "sd.sock")
    assert len(sock) > 107
    nv.start_daemon(sock)
    nv.run_lua("test_health", extra_env={"SD_TEST_SOCKET": sock})


def test_sub_agent_folds_and_follow_up(nv):
    nv.write_script("- match: please delegate\n  text: delegating\n"
                    "  tool_calls: [{name: spawn_agent, arguments: {task: count the files, name: counter}}]\n"
                    "- match: spawned sub-agent\n  text: the sub-agent is on it\n"
                    "- match: count the files\n  text: there are 3 files\n"
                    "- match: 'finished: completed'\n  text: the counter says 3\n")
    nv.start_daemon()
    nv.run_lua("test_subagent")


def test_reconnects_to_a_restarted_daemon(nv):
    nv.write_script("- match: after restart\n  text: still here\n")
    nv.start_daemon()
    nv.run_lua("test_restart")


def test_a_stopped_daemon_is_named_and_started_again(nv):
    """daemon/will_stop reaches the plugin (issue 26): it says the daemon stopped and why, and
    :Sessiondag start starts one with auto_start off."""
    nv.write_script("- match: after the stop\n  text: still here\n")
    nv.start_daemon()
    nv.run_lua("test_will_stop")


def test_restore_and_diff_commands(nv):
    nv.write_script("- match: one\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"one\\n\"}}]\n"
                    "- match: two\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"two\\n\"}}]\n"
                    "- match: f.txt\n  repeat: true\n  text: wrote it\n")
    nv.start_daemon()
    nv.run_lua("test_checkpoints")
    assert (nv.work / "f.txt").read_text() == "two\n" and (nv.work / "mine.txt").exists() is False


def test_a_refused_prompt_keeps_the_text_and_says_why(nv, tmp_path):
    """The session's first turn ran from a terminal on an OpenAI-compatible endpoint; the daemon
    serving Neovim has none: the refusal names the daemon's environment, above the prompt, and the
    typed message is kept (issue 26, item 2; it was only in :messages and the prompt vanished)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime"))
    from loopback_openai import LoopbackOpenAI
    with LoopbackOpenAI([{"text": "from the endpoint", "repeat": True}]) as srv:
        env = {**nv.env, "SESSIONDAG_OPENAI_BASE_URL": srv.base_url, "SESSIONDAG_OPENAI_API_KEY": "k"}
        r = subprocess.run([sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())",
                            "run", "first, from the terminal", "--provider", "openai", "--model", "m", "--in-process"],
                           cwd=nv.work, env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    nv.write_script("- text: the daemon's own scripted reply\n")   # its default is not the session's model
    nv.start_daemon()
    nv.run_lua("test_refused")


def test_discovery_follows_the_shared_table(nv):
    """sessiondag.paths against tests/fixtures/discovery.json, the table the Python and TypeScript
    clients are checked against too (state dir, runtime dir, socket, log, pidfile, dead and zombie
    pids, the /proc short-address rule)."""
    nv.run_lua("test_discovery", extra_env={"SD_TEST_FIXTURE": str(REPO / "tests" / "fixtures" / "discovery.json")})


def test_the_session_picker_shows_titles(nv):
    """Issue 26, 12: the picker labels sessions by title, as `sessiondag sessions list` does: the
    first message, or the title `sessions name` set — renamed while the daemon holds the session."""
    import json
    import sys
    cli = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]

    def run(*args):
        r = subprocess.run(cli + list(args), cwd=nv.work, env=nv.env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout
    nv.write_script("- text: done\n  repeat: true\n")
    nv.start_daemon()
    first = json.loads(run("run", "fix the flaky test in the parser", "--json"))["session_id"]
    second = json.loads(run("run", "write the release notes", "--json"))["session_id"]
    run("sessions", "name", first, "Flaky test hunt")             # the daemon holds the session meanwhile
    listed = {r["session_id"]: r["title"] for r in json.loads(run("sessions", "list", "--json"))}
    assert listed == {first: "Flaky test hunt", second: "write the release notes"}
    nv.run_lua("test_picker_titles", extra_env={"SD_TEST_TITLES": json.dumps(listed)})
