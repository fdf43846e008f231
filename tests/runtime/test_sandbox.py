"""Issue 19, item 5: run_command under the OS sandbox (Landlock). `rm -rf ../x`, writing `$HOME/x`
and connecting to a loopback server are refused and reported in the output; the working dir stays
writable; the mode is recorded on the node; agent.sandbox = off runs with the daemon's rights."""

import os
import socket

import pytest

from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.tools import ToolContext, run_command
from sessiondag.workspace.sandbox_exec import abi
from setup_check import require


def ctx(wd, **kw):
    return ToolContext(str(wd), Runtime(ScriptedProvider(), permissions=allow_policy({"run"}), **kw))


def _outside(tmp_path, monkeypatch):
    """A working dir, a dir beside it to keep, a $HOME and a loopback server on the host."""
    wd, x, home = tmp_path / "wd", tmp_path / "x", tmp_path / "home"
    for d in (wd, x, home):
        d.mkdir()
    (x / "keep.txt").write_text("keep")
    monkeypatch.setenv("HOME", str(home))
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    return wd, x, home, srv


def test_this_kernel_has_landlock():
    assert abi() >= 4, "issue 19 expects Landlock with TCP rules (ABI >= 4) on the build machines"


@pytest.mark.network
def test_writes_outside_and_connections_are_refused_the_working_dir_stays_writable(tmp_path, monkeypatch):
    wd, x, home, srv = _outside(tmp_path, monkeypatch)
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


@pytest.mark.process
def test_read_only_and_off(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    out = run_command(ctx(wd, sandbox="read-only"), "echo no > f.txt; cat /etc/hostname > /dev/null && echo read-ok")
    assert not (wd / "f.txt").exists() and "read-ok" in out and "Permission denied" in out
    out = run_command(ctx(wd, sandbox="off"), "echo yes > ../outside.txt")
    assert (tmp_path / "outside.txt").read_text() == "yes\n" and out.metadata["sandbox"] == {"mode": "off"}


@pytest.mark.process
def test_the_mode_is_recorded_on_the_node(store, workdir):
    script = [{"match": "go", "tool_calls": [{"name": "run_command", "arguments": {"command": "touch ../escaped"}}]},
              {"text": "done"}]
    rt = Runtime(ScriptedProvider(script), permissions=allow_policy({"run"}))
    r = run_task("go", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    [node] = [c for c in s.get_branch() if c.name == "run_command"]
    assert node.status == "completed" and node.metadata["sandbox"]["mode"] == "workspace-write"
    assert "Permission denied" in node.output and not os.path.exists(os.path.join(os.path.dirname(workdir), "escaped"))


def test_this_machine_has_bubblewrap():
    from sessiondag.workspace.sandbox_bwrap import path
    require(path(), "bubblewrap (`bwrap`, mk/sandbox.mk installs it from apt)", "sandbox-install")


@pytest.mark.network
def test_the_bubblewrap_fallback_refuses_the_same_things(tmp_path, monkeypatch):
    """Where the kernel has no Landlock, bubblewrap holds the same line (forced here with
    sandbox_via="bwrap"): nothing outside is written or removed, no connection reaches a host server,
    the working dir and the private tmp stay writable; read-only keeps the working dir too."""
    wd, x, home, srv = _outside(tmp_path, monkeypatch)
    srv.setblocking(False)
    port = srv.getsockname()[1]
    try:
        out = run_command(ctx(wd, sandbox_via="bwrap"),
                          f"rm -rf ../x; echo pwned > $HOME/x; echo ok > inside.txt; "
                          f"echo t > $TMPDIR/t && echo tmp-ok; "
                          f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))' "
                          f"|| echo connect-failed")
        try:
            srv.accept()
            reached = True
        except BlockingIOError:   # the command has ended: a connection it made would be queued by now
            reached = False
    finally:
        srv.close()
    assert (x / "keep.txt").read_text() == "keep" and not (home / "x").exists()
    assert (wd / "inside.txt").read_text() == "ok\n" and not reached
    assert "Read-only file system" in out and "tmp-ok" in out and "connect-failed" in out, out
    assert out.metadata["sandbox"] == {"mode": "workspace-write", "via": "bwrap", "network": False}
    out = run_command(ctx(wd, sandbox_via="bwrap", sandbox="read-only"), "echo no > f.txt; echo t > $TMPDIR/t && echo tmp-ok")
    assert not (wd / "f.txt").exists() and "tmp-ok" in out and "Read-only file system" in out, out


def test_no_sandbox_to_be_had_is_refused_not_run_unconfined(tmp_path, monkeypatch):
    import pytest
    from sessiondag.runtime.errors import PermissionDeniedError
    wd = tmp_path / "wd"
    wd.mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))   # no bwrap to be found
    with pytest.raises(PermissionDeniedError, match="no bwrap on PATH"):
        run_command(ctx(wd, sandbox_via="bwrap"), "echo ran > ran.txt")
    assert not (wd / "ran.txt").exists()
