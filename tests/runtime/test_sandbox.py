"""Issue 19, item 5: run_command under the OS sandbox (Landlock). `rm -rf ../x`, writing `$HOME/x`
and connecting to a loopback server are refused and reported in the output; the working dir stays
writable; the mode is recorded on the node; agent.sandbox = off runs with the daemon's rights."""

import os
import socket

from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.tools import ToolContext, run_command
from sessiondag.workspace.sandbox_exec import abi


def ctx(wd, **kw):
    return ToolContext(str(wd), Runtime(ScriptedProvider(), permissions=allow_policy({"run"}), **kw))


def test_this_kernel_has_landlock():
    assert abi() >= 4, "issue 19 expects Landlock with TCP rules (ABI >= 4) on the build machines"


def test_writes_outside_and_connections_are_refused_the_working_dir_stays_writable(tmp_path, monkeypatch):
    wd, x, home = tmp_path / "wd", tmp_path / "x", tmp_path / "home"
    for d in (wd, x, home):
        d.mkdir()
    (x / "keep.txt").write_text("keep")
    monkeypatch.setenv("HOME", str(home))
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    try:
        out = run_command(ctx(wd), f"rm -rf ../x; echo pwned > $HOME/x; echo ok > inside.txt; "
                                   f"echo t > $TMPDIR/t && echo tmp-ok; "
                                   f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'")
    finally:
        srv.close()
    assert (x / "keep.txt").read_text() == "keep" and not (home / "x").exists()
    assert (wd / "inside.txt").read_text() == "ok\n"
    assert "Permission denied" in out and "tmp-ok" in out and "PermissionError" in out, out
    assert out.metadata["sandbox"] == {"mode": "workspace-write", "via": "landlock", "abi": abi(), "network": False}


def test_read_only_and_off(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    out = run_command(ctx(wd, sandbox="read-only"), "echo no > f.txt; cat /etc/hostname > /dev/null && echo read-ok")
    assert not (wd / "f.txt").exists() and "read-ok" in out and "Permission denied" in out
    out = run_command(ctx(wd, sandbox="off"), "echo yes > ../outside.txt")
    assert (tmp_path / "outside.txt").read_text() == "yes\n" and out.metadata["sandbox"] == {"mode": "off"}


def test_the_mode_is_recorded_on_the_node(store, workdir):
    script = [{"match": "go", "tool_calls": [{"name": "run_command", "arguments": {"command": "touch ../escaped"}}]},
              {"text": "done"}]
    rt = Runtime(ScriptedProvider(script), permissions=allow_policy({"run"}))
    r = run_task("go", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    [node] = [c for c in s.get_branch() if c.name == "run_command"]
    assert node.status == "completed" and node.metadata["sandbox"]["mode"] == "workspace-write"
    assert "Permission denied" in node.output and not os.path.exists(os.path.join(os.path.dirname(workdir), "escaped"))
