"""Harness for the ACP tests (tests/acp, tests/mcp): a spawned `sessiondag acp` (real pipes) that
auto-starts a real daemon on a private state dir, driven by the Python SDK's client side; the daemon
is stopped at the end. The `acp_env` fixture is defined here once (both conftests import it);
`acp_session` is the usual set-up: the script, a recording client, the ACP process, a new session."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from waiting import WaitTimeout, wait_until

import acp
import pytest
from sessiondag_client import connect
from terminal_client import Terminals
from acp.schema import AllowedOutcome, ClientCapabilities, DeniedOutcome, FileSystemCapabilities, \
    ReadTextFileResponse, RequestPermissionResponse, WriteTextFileResponse

ACP_CMD = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "acp"]


class Env:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.state = tmp / "state"
        self.work = tmp / "work"
        self.work.mkdir(exist_ok=True)
        self.script = tmp / "script.yaml"
        self.script.write_text("[]\n")
        self.env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(self.script),
                        SESSIONDAG_HOME=str(self.state))
        self.logs: list[Path] = []

    def args(self, *extra: str) -> list[str]:
        return [*ACP_CMD[1:], "--state-dir", str(self.state), *extra]

    def daemon_pid(self) -> int | None:
        try:
            return json.loads((self.state / "daemon.pid").read_text())["pid"]
        except (OSError, ValueError, KeyError):
            return None

    def stop_daemon(self) -> None:
        """SIGTERM the daemon the ACP process started and wait until it is gone."""
        pid = self.daemon_pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        try:
            wait_until(lambda: not _alive(pid), "the daemon to stop after SIGTERM", timeout=30, interval=0.02)
        except WaitTimeout:
            os.kill(pid, signal.SIGKILL)
            raise


def _alive(pid: int) -> bool:
    """False once the process is gone (reaped, or a zombie: a daemon this test process started)."""
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class RecordingClient:
    """An ACP client: records session/update notifications, answers permissions from a queue of
    option ids (default: reject), and serves fs requests from an in-memory 'editor' when enabled."""

    def __init__(self, *, fs: bool = False, terminal: bool = False):
        self.updates: list[tuple[str, Any]] = []
        self.permission_answers: list[str] = []
        self.permission_requests: list[Any] = []
        self.fs = fs
        self.buffers: dict[str, str] = {}        # path -> unsaved editor text
        self.fs_reads: list[str] = []
        self.fs_writes: list[tuple[str, str]] = []
        self.on_permission = None
        self.terminals = Terminals() if terminal else None   # a real terminal/* (terminal_client.py)

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs),
                                  terminal=self.terminals is not None)

    def __getattr__(self, name: str) -> Any:   # terminal/* when offered
        terms = self.__dict__.get("terminals")
        if terms is not None and name in ("create_terminal", "terminal_output", "wait_for_terminal_exit",
                                          "kill_terminal", "release_terminal"):
            return getattr(terms, name)
        raise AttributeError(name)

    async def request_permission(self, options, session_id, tool_call, **kw):
        self.permission_requests.append(tool_call)
        if self.on_permission is not None:
            await self.on_permission(tool_call)
        if not self.permission_answers:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        choice = self.permission_answers.pop(0)
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=choice))

    async def session_update(self, session_id, update, **kw):
        self.updates.append((session_id, update))

    async def read_text_file(self, path, session_id, limit=None, line=None, **kw):
        self.fs_reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, content, path, session_id, **kw):
        self.fs_writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    def of(self, kind: str, session_id: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if u.session_update == kind and (session_id is None or s == session_id)]

    def agent_text(self, session_id: str | None = None) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk", session_id))

    def clear(self) -> None:
        self.updates.clear()


@contextlib.asynccontextmanager
async def acp_process(env: Env, client: RecordingClient, *extra: str):
    """A spawned `sessiondag acp`, initialized; yields the SDK's ClientSideConnection."""
    log = env.tmp / f"acp-{len(env.logs)}.log"
    env.logs.append(log)
    with open(log, "wb") as err:
        async with acp.spawn_agent_process(client, ACP_CMD[0], *env.args(*extra), env=env.env,
                                           transport_kwargs={"stderr": err},
                                           use_unstable_protocol=True) as (conn, proc):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                                         client_capabilities=client.capabilities())
            conn.init = init
            conn.proc = proc
            yield conn


async def new_session(conn, env: Env, cwd: Path | None = None) -> str:
    return (await conn.new_session(cwd=str(cwd or env.work), mcp_servers=[])).session_id


@contextlib.asynccontextmanager
async def acp_session(env: Env, script: str | None = None, *, client: RecordingClient | None = None,
                      mcp_servers: list[Any] | None = None, cwd: Path | None = None):
    """The usual set-up: `script` for the scripted provider, a RecordingClient (or `client`), a
    spawned `sessiondag acp`, initialized, and a new session; yields (conn, client, session id)."""
    if script is not None:
        env.script.write_text(script)
    client = client or RecordingClient()
    async with acp_process(env, client) as conn:
        sid = (await conn.new_session(cwd=str(cwd or env.work), mcp_servers=list(mcp_servers or []))).session_id
        yield conn, client, sid


@pytest.fixture
def acp_env(tmp_path):
    e = Env(tmp_path)
    yield e
    e.stop_daemon()


async def daemon_branch(env, sid):
    c = await connect(state_dir=str(env.state), auto_start=True)
    try:
        return await c.get_branch(sid)
    finally:
        await c.aclose()


def cli_json(env, *args):
    out = subprocess.run([ACP_CMD[0], *ACP_CMD[1:3], "sessions", *args, "--json"], env=env.env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def cli_branch(env, sid):
    """(id, status) of the branch as `sessiondag sessions log --json` shows it (calls after their row)."""
    out = []
    for r in cli_json(env, "log", sid):
        out.append((r["id"], r["status"]))
        out += [(c["id"], c["status"]) for c in r.get("calls") or ()]
    return out
