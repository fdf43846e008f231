"""A session's MCP servers in a real daemon, over its own protocol (the Python client): given with
`session/open {mcp_servers}` they start at once, stop when the daemon closes the idle session, start
again for its next prompt, and stop with the daemon."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest
from sessiondag_client import connect_unix
from waiting import until

sys.path.insert(0, str(Path(__file__).parent.parent / "e2e"))
from e2e_support import DaemonProc  # noqa: E402

pytestmark = pytest.mark.anyio
SERVER = str(Path(__file__).parent / "servers.py")


def servers_with(marker: str) -> list[int]:
    """Pids of the test MCP servers whose environment carries `marker`."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if SERVER.encode() not in f.read():
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"MCP_TEST_ENV={marker}".encode() in f.read().split(b"\0"):
                    out.append(int(pid))
        except OSError:
            continue
    return out




async def test_servers_start_at_open_stop_when_idle_restart_for_a_prompt_stop_with_the_daemon(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.yaml"
    script.write_text("- match: where\n  tool_calls: [{name: mcp__t__where, arguments: {}}]\n"
                      "- match: cwd=\n  text: found the server\n")
    env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script))
    d = DaemonProc(["--socket", "--state-dir", str(tmp_path / "state"), "--session-idle-timeout", "0.3"], env=env)
    marker = uuid.uuid4().hex
    c = await connect_unix(d.socket)
    try:
        async def permit(p):
            return {"granted": p["kind"] == "mcp" and p["detail"]["tool"] == "mcp:t/where"}
        c.on_request("agent/request_permission", permit)
        h = await c.open("mcp-1", working_dir=str(work), mcp_servers={
            "t": {"command": sys.executable, "args": [SERVER, "stdio"], "env": {"MCP_TEST_ENV": marker}}})
        (first,) = servers_with(marker)   # started by the open, before any prompt
        await until(lambda: not servers_with(marker), "the idle session's server stopped", timeout=60)
        assert (await c.status())["sessions_open"] == []
        res = await c.call("agent/prompt", {"session_id": h.id, "content": "where are you"})
        assert res["text"] == "found the server", res
        (again,) = servers_with(marker)
        assert again != first
    finally:
        await c.aclose()
    d.stop()
    assert servers_with(marker) == []   # and none is left behind by the daemon
