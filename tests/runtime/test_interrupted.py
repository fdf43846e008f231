"""A `sessiondag run` SIGKILLed while its model call is in flight leaves an llm node `running`.
Opening the session afterwards finalizes it as `error` (metadata.error.type = "interrupted"),
commits that as a turn, and the next prompt (and a retry fork) work from there. A node whose
writer is still alive is left alone."""

import os
import signal
import socket
import subprocess
import sys
import threading

import pytest

from sessiondag import Call
from sessiondag.runtime.loop import retry_point
from sessiondag.store import SessionStore
from cli_support import CLI, run_cli
from processes import descendants, gone
from waiting import wait_until


class StallingServer:
    """Loopback HTTP: reads a request and never answers (a model call in flight forever)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.got_request = threading.Event()
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            self.got_request.set()

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def _git_count(path):
    r = subprocess.run(["git", f"--git-dir={path}/git", "rev-list", "--count", "refs/heads/main"],
                       capture_output=True, text=True)
    return int(r.stdout.strip() or 0)


@pytest.mark.process
def test_sigkill_mid_turn_then_open_finalizes_and_retries(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    r = run_cli(["run", "first task", "--session", "crashy", "--new", "--workdir", work], home=home)
    assert r.returncode == 0, r.stderr
    srv = StallingServer()
    env = dict(os.environ, SESSIONDAG_HOME=str(home), SESSIONDAG_PROVIDER="openai",
               SESSIONDAG_OPENAI_BASE_URL=f"http://127.0.0.1:{srv.port}/v1", SESSIONDAG_OPENAI_API_KEY="k",
               SESSIONDAG_MODEL="m")
    # the session recorded the scripted model at its first turn: this turn names its provider
    p = subprocess.Popen(CLI + ["run", "second task", "--session", "crashy", "--workdir", str(work),
                                "--provider", "openai"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert srv.got_request.wait(60), "the run never called the model"
        below = descendants(p.pid)   # the run's private daemon child, which runs the turn
        assert below, "the run has no daemon child"
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        # the child ends with the run (serve --parent-pid): the turn crashed, as a killed run's always did
        wait_until(lambda: all(gone(c) for c in below), "the run's daemon child to end with it", timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        srv.close()
    path = os.path.join(home, "sessions", "crashy")
    commits_before = _git_count(path)
    store = SessionStore(home)
    try:
        s = store.session("crashy")
        llms = [c for c in s.graph.nodes.values() if c.role == "llm"]
        stuck = [c for c in s.graph.nodes.values() if c.status == "running"]
        assert not stuck, f"{len(stuck)} node(s) still running after open"
        crashed = max(llms, key=lambda c: c.seq)
        assert crashed.status == "error" and crashed.metadata["error"]["type"] == "interrupted"
        assert not s.open_turn and _git_count(path) == commits_before + 1  # committed as a turn
        assert not os.listdir(os.path.join(path, "running"))  # its lease went with it
        branch_from = retry_point(s, crashed.id)
    finally:
        store.close()
    # the next prompt continues after the interrupted turn; a retry forks from its predecessor
    r = run_cli(["run", "third task", "--session", "crashy", "--workdir", work], home=home)
    assert r.returncode == 0, r.stderr
    store = SessionStore(home)
    try:
        s = store.session("crashy")
        assert s.get_branch()[-1].status == "completed"
        user = s.graph.get(s.graph.get(crashed.id).caller)
        assert user.predecessor == branch_from
    finally:
        store.close()
    # and the interrupted turn retried: an ordinary fork from its user node's predecessor
    r = run_cli(["run", "second task, again", "--session", "crashy", "--workdir", work,
                 "--branch-from", branch_from], home=home)
    assert r.returncode == 0, r.stderr
    store = SessionStore(home)
    try:
        s = store.session("crashy")
        branch = s.get_branch()
        assert branch[-1].status == "completed" and crashed.id not in {c.id for c in branch}
        retry = next(c for c in branch if c.role == "user" and c.output == "second task, again")
        assert retry.predecessor == branch_from
        assert s.get_node(crashed.id).status == "error"  # the failed line is kept
    finally:
        store.close()


CHILD = r"""
import sys
from sessiondag import Call
from sessiondag.store import SessionStore
s = SessionStore(sys.argv[1]).session("live")
c = s.append(Call("llm", "m", output="", predecessor=s.head_id, status="running"))
print(c.id, flush=True)
sys.stdin.read()  # stays alive (owning its running node) until the parent closes stdin
"""


def _writer(state):
    """A writer process owning one running node of session "live" (CHILD), and that node's id."""
    SessionStore(state).start_session("live", working_dir=None)
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(state)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    nid = p.stdout.readline().strip()
    assert nid
    return p, nid


def _assert_interrupted(state, nid):
    """Opening the store finalizes node `nid` of "live" as interrupted."""
    store = SessionStore(state)
    try:
        c = store.session("live").get_node(nid)
        assert c.status == "error" and c.metadata["error"]["type"] == "interrupted"
    finally:
        store.close()


@pytest.mark.process
def test_a_running_node_of_a_live_writer_is_left_alone(tmp_path):
    state = tmp_path / "state"
    p, nid = _writer(state)
    try:
        store = SessionStore(state)
        try:
            assert store.session("live").get_node(nid).status == "running"  # its writer lives
        finally:
            store.close()
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        _assert_interrupted(state, nid)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.process
def test_a_writer_dead_but_not_yet_reaped_is_gone(tmp_path):
    """A writer that ended is dead even while it is a zombie (its parent has not waited for it yet, as
    when a `sessiondag run` is killed and its daemon child waits for init): its running node is
    finalized, not left to a pid that only looks alive."""
    state = tmp_path / "state"
    p, nid = _writer(state)
    try:
        os.kill(p.pid, signal.SIGKILL)   # not p.wait(): it stays a zombie of this process
        wait_until(lambda: gone(p.pid), "the writer to be a zombie", timeout=30)
        assert os.path.exists(f"/proc/{p.pid}")   # not reaped: its pid and start time still read
        _assert_interrupted(state, nid)
    finally:
        p.kill()
        p.wait()


def test_a_running_node_in_this_process_is_left_alone_and_finishes(tmp_path):
    state = tmp_path / "state"
    store = SessionStore(state)
    s = store.session(store.start_session("mine", working_dir=None).id)
    c = s.append(Call("llm", "m", output="", predecessor=s.head_id, status="running"))
    other = SessionStore(state)
    try:
        assert other.session("mine").get_node(c.id).status == "running"
    finally:
        other.close()
    assert len(os.listdir(os.path.join(s.path, "running"))) == 1
    s.update(c.id, output="done", status="completed")
    assert os.listdir(os.path.join(s.path, "running")) == []  # a finished node drops its lease
    store.close()


@pytest.mark.network
def test_daemon_killed_during_agent_prompt_then_restarted(tmp_path):
    """The campaign's case: SIGKILL of the daemon while agent/prompt waits on the model; after a
    restart, opening the session finalizes the llm node as interrupted and a new prompt works."""
    import anyio
    from sessiondag_client import connect_unix
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
    from e2e_support import DaemonProc

    state, work = tmp_path / "state", tmp_path / "work"
    work.mkdir()
    srv = StallingServer()
    env = dict(os.environ, SESSIONDAG_PROVIDER="openai", SESSIONDAG_OPENAI_BASE_URL=f"http://127.0.0.1:{srv.port}/v1",
               SESSIONDAG_OPENAI_API_KEY="k", SESSIONDAG_MODEL="m")

    async def first():
        d = DaemonProc(["--socket", "--state-dir", str(state)], env=env)
        try:
            c = await connect_unix(d.socket)
            h = await c.open(working_dir=str(work))
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: c.call("agent/prompt", {"session_id": h.id, "content": "hang"}))
                await anyio.to_thread.run_sync(srv.got_request.wait, 60)
                d.proc.send_signal(signal.SIGKILL)
                d.proc.wait(30)
                tg.cancel_scope.cancel()
            return h.id
        finally:
            if d.proc.poll() is None:
                d.proc.kill()
                d.proc.wait()

    async def second(sid):
        d = DaemonProc(["--socket", "--state-dir", str(state)])  # scripted provider now
        try:
            c = await connect_unix(d.socket)
            await c.open(sid, working_dir=str(work))
            llms = [n for n in await c.get_branch(sid) if n.role == "llm"]
            assert [(n.status, n.metadata["error"]["type"]) for n in llms] == [("error", "interrupted")]
            # the session recorded the first daemon's openai model; this prompt overrides it
            r = await c.call("agent/prompt", {"session_id": sid, "content": "try again", "provider": "scripted"})
            assert r["stop_reason"] == "end_turn"
            await c.aclose()
        finally:
            d.stop()

    try:
        sid = anyio.run(first)
    finally:
        srv.close()
    anyio.run(second, sid)
