"""`sessiondag mcp list|add|remove|test` and an in-process `sessiondag run` that uses a working
dir's MCP server, as real processes (the MCP server is the SDK's MCPServer in tests/mcp/servers.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SERVER = str(Path(__file__).parent / "servers.py")
CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


def sd(tmp: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SESSIONDAG_HOME=str(tmp / "state"), SESSIONDAG_PROVIDER="scripted",
               SESSIONDAG_SCRIPT=str(tmp / "script.yaml"))
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_add_list_test_remove(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    r = sd(tmp_path, "mcp", "add", "t", "--env", "MCP_TEST_ENV=secret-value", "--", sys.executable, SERVER, "stdio",
           cwd=work)
    assert r.returncode == 0, r.stderr
    assert sd(tmp_path, "mcp", "add", "dead", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization: x",
              cwd=work).returncode == 0
    doc = json.loads((work / ".sessiondag" / "mcp.json").read_text())
    assert doc["mcpServers"]["t"] == {"command": sys.executable, "args": [SERVER, "stdio"],
                                      "env": {"MCP_TEST_ENV": "secret-value"}}
    listed = sd(tmp_path, "mcp", "list", "--json", cwd=work)
    rows = {s["name"]: s for s in json.loads(listed.stdout)["servers"]}
    assert rows["t"]["env"] == ["MCP_TEST_ENV"] and rows["dead"]["headers"] == ["Authorization"]
    assert "secret-value" not in listed.stdout   # env and header values are never printed
    tested = sd(tmp_path, "mcp", "test", "--json", cwd=work)
    assert tested.returncode == 1
    res = {s["name"]: s for s in json.loads(tested.stdout)["servers"]}
    assert res["t"]["ok"] and {"echo", "add", "crash"} <= set(res["t"]["tools"])
    assert res["dead"]["error"]["kind"] == "mcp_server_failed" and res["dead"]["error"]["reason"] == "start_failed"
    assert sd(tmp_path, "mcp", "remove", "dead", cwd=work).returncode == 0
    assert sd(tmp_path, "mcp", "test", cwd=work).returncode == 0
    gone = sd(tmp_path, "mcp", "remove", "dead", cwd=work)
    assert gone.returncode == 1 and "no MCP server 'dead'" in gone.stderr


def test_a_bad_mcp_file_is_a_named_error(tmp_path):
    work = tmp_path / "work"
    (work / ".sessiondag").mkdir(parents=True)
    (work / ".sessiondag" / "mcp.json").write_text('{"mcpServers": {"x": {"type": "carrier-pigeon"}}}')
    r = sd(tmp_path, "mcp", "list", cwd=work)
    assert r.returncode == 2 and "mcp.json: mcpServers.x" in r.stderr


def test_an_in_process_run_uses_the_working_dirs_server(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "script.yaml").write_text(
        "- match: add\n  tool_calls: [{name: mcp__calc__add, arguments: {a: 2, b: 3}}]\n"
        "- match: '5'\n  text: it is five\n")
    assert sd(tmp_path, "mcp", "add", "calc", "--", sys.executable, SERVER, "stdio", cwd=work).returncode == 0
    refused = sd(tmp_path, "run", "--in-process", "--json", "add two and three", cwd=work)
    out = json.loads(refused.stdout)
    assert out["text"] != "it is five"   # no --allow: the MCP call was refused
    ok = sd(tmp_path, "run", "--in-process", "--json", "--allow", "mcp:calc", "add two and three", cwd=work)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["text"] == "it is five"
