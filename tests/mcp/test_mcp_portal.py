"""A session's MCP servers in their anyio blocking portal (runtime/mcp_servers.py), driven directly
as the agent loop's worker threads do: a call goes through the portal and back, a set never stopped
does not hold up the process's exit (the portal's loop runs in a daemon thread), and a stopped set
refuses further calls instead of starting anything again."""

import os
import subprocess
import sys

SERVERS = os.path.join(os.path.dirname(__file__), "servers.py")

SCRIPT = r"""
import sys
from sessiondag.core.errors import McpServerError
from sessiondag.core.mcp_config import parse_servers
from sessiondag.runtime.mcp_servers import McpServers

servers = parse_servers({"t": {"command": sys.executable, "args": [sys.argv[1], "stdio"]}}, "test")
m = McpServers(servers, sys.argv[2])
m.start()
print(m.call("t", "add", {"a": 2, "b": 3}).content[0].text, flush=True)
if sys.argv[3] == "stop":
    m.stop()
    try:
        m.call("t", "add", {"a": 1, "b": 1})
    except McpServerError as e:
        print("refused:", e.reason, flush=True)
# "leave": exit with the servers still up, no stop()
"""


def _run(tmp_path, how):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    # a hang guard, not a speed check: an exit held up by the portal's thread would never end
    return subprocess.run([sys.executable, "-c", SCRIPT, SERVERS, str(tmp_path), how], capture_output=True,
                          text=True, env=env, timeout=120)


def test_a_set_never_stopped_does_not_hold_up_the_exit(tmp_path):
    r = _run(tmp_path, "leave")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["5"]


def test_a_stopped_set_refuses_calls(tmp_path):
    r = _run(tmp_path, "stop")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["5", "refused: crashed"]
