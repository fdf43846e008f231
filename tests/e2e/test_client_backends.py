"""The Python client is anyio through and through: every test here runs under asyncio and under trio,
against a real daemon over a Unix socket, loopback TCP and stdio — connect, calls, notifications, a server→
client request answered by a handler, cancellation, a daemon that stops answering, close and reconnect."""

import os
import signal

import anyio
import pytest

from sessiondag_client import (ConnectionClosedError, DaemonNotResponding, RequestCancelledError, connect,
                               connect_tcp, connect_unix, spawn_stdio)

from e2e_support import DaemonProc

pytestmark = pytest.mark.anyio

SCRIPT = ("- tool_calls: [{name: ask_user, arguments: {question: color, options: [red, green]}}]\n"
          "- match: green\n  text: green it is\n")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture(params=["unix", "tcp", "stdio"])
def transport(request):
    return request.param


@pytest.fixture
def daemon_env(tmp_path, state_dir):
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    return dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script))


@pytest.fixture
def dial(transport, state_dir, daemon_env):
    """dial() -> a connected client over `transport` (the socket's daemon is started once, on first use)."""
    daemons: list[DaemonProc] = []

    async def dial(**kw):
        if transport == "stdio":
            return await spawn_stdio(str(state_dir), env=daemon_env, **kw)
        if not daemons:
            daemons.append(_daemon(transport, state_dir, daemon_env))
        if transport == "tcp":
            return await connect_tcp(*daemons[0].tcp, token_file=daemons[0].ready["token_file"], **kw)
        return await connect_unix(daemons[0].socket, **kw)
    dial.daemons = daemons
    yield dial
    for d in daemons:
        if d.proc.poll() is None:
            d.proc.send_signal(signal.SIGCONT)
            d.stop()


def _daemon(transport, state_dir, env):
    where = ["--tcp", "127.0.0.1:0"] if transport == "tcp" else ["--socket"]
    return DaemonProc([*where, "--state-dir", str(state_dir)], env=env)


def _pid(c, dial):
    """The daemon's pid: the spawned one (stdio), the peer's (Unix), the one the test started (TCP)."""
    if getattr(c, "process", None) is not None:
        return c.process.pid
    return c.peer_pid if c.peer_pid is not None else dial.daemons[0].proc.pid


async def test_calls_and_notifications(dial, workdir):
    c = await dial()
    try:
        assert c.connected and c.server_info
        h = await c.open(working_dir=str(workdir))
        await c.subscribe(h.id)
        u, head = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        assert head == u.id
        appended = []
        while not appended:   # the open's own changes (meta) may come first
            note = await c.next_notification("session/did_change")
            assert note["params"]["session_id"] == h.id
            appended = [ch["node"]["id"] for ch in note["params"]["changes"] if ch["kind"] == "append"]
        assert appended == [u.id]
        async with anyio.create_task_group() as tg:   # concurrent calls on one connection
            for i in range(8):
                tg.start_soon(c.ping)
        assert [n.id for n in await c.get_branch(h.id)] == [u.id]
        assert c.pending_notifications() == []
    finally:
        await c.aclose()


async def test_a_server_request_is_answered_by_its_handler(dial, workdir):
    c = await dial()
    asked = []

    async def on_ask(params):
        asked.append(params["question"])
        await anyio.sleep(0)   # a handler may wait: it runs in a task of its own
        return {"answer": "green"}
    c.on_request("agent/ask_user", on_ask)
    try:
        h = await c.open(working_dir=str(workdir))
        r = await c.agent_prompt(h.id, "pick")
        assert r["text"] == "green it is" and asked == ["color"]
    finally:
        await c.aclose()


async def _in_flight(c):
    return (await c.status())["clients"][0]["in_flight"]   # counts the status call itself


async def _until_in_flight(c, n):
    with anyio.fail_after(20):
        while await _in_flight(c) != n:
            await anyio.sleep(0.01)


async def test_cancel_sends_cancel_request(dial):
    c = await dial()
    try:
        async with anyio.create_task_group() as tg:   # a cancelled scope around a call: $/cancelRequest
            tg.start_soon(lambda: c.ping(delay=60))
            await _until_in_flight(c, 2)
            tg.cancel_scope.cancel()
        await _until_in_flight(c, 1)
        with anyio.move_on_after(0.05):               # a deadline the caller sets ends the call the same way
            await c.ping(delay=60)
        await _until_in_flight(c, 1)
        done = []
        async with anyio.create_task_group() as tg:   # cancelled by id: the daemon answers -32800
            async def slow():
                with pytest.raises(RequestCancelledError):
                    await c.call("daemon/ping", {"delay": 60})
                done.append(True)
            tg.start_soon(slow)
            await _until_in_flight(c, 2)
            await c.notify("$/cancelRequest", {"id": max(c._pending)})
        assert done == [True] and c.connected
    finally:
        await c.aclose()


async def test_a_stopped_daemon_is_named(dial, transport):
    c = await dial()
    await c.ping()     # ready (a loaded machine may take seconds for the first answers)
    c.timeout = 1.0
    pid = _pid(c, dial)
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(DaemonNotResponding) as e:
            await c.ping()
        assert e.value.pid == (None if transport == "tcp" else pid)   # TCP does not tell the peer's pid
    finally:
        os.kill(pid, signal.SIGCONT)
        await c.aclose()


async def test_close_ends_calls_and_a_dead_daemon_ends_the_connection(dial, state_dir, transport, daemon_env):
    c = await dial()
    await c.ping()
    await c.aclose()
    assert not c.connected
    with pytest.raises(ConnectionClosedError):
        await c.ping()
    await c.aclose()   # twice: a no-op

    c = await dial()   # reconnect to the same daemon (unix, tcp) or a fresh one (stdio)
    try:
        assert (await c.ping()) == {}
        pid = _pid(c, dial)
        async with anyio.create_task_group() as tg:
            async def pending():
                with pytest.raises(ConnectionClosedError):
                    await c.ping(delay=60)
            tg.start_soon(pending)
            await _until_in_flight(c, 2)
            os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(20):
            while c.connected:
                await anyio.sleep(0.01)
    finally:
        await c.aclose()
    if transport == "unix":   # a new daemon on the state dir; connect() finds it through its pidfile
        dial.daemons[0].proc.wait()
        dial.daemons[0] = DaemonProc(["--socket", "--state-dir", str(state_dir)], env=daemon_env)
        c = await connect(state_dir=str(state_dir))
        try:
            assert (await c.status())["pid"] == dial.daemons[0].proc.pid
        finally:
            await c.aclose()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_blocking_client_runs_its_loop_on_either_backend(backend, transport, dial, state_dir, daemon_env, workdir):
    from sessiondag_client import SyncClient
    if transport == "stdio":
        c = SyncClient.connect(stdio=True, state_dir=str(state_dir), env=daemon_env, backend=backend)
    else:
        d = _daemon(transport, state_dir, daemon_env)
        dial.daemons.append(d)
        if transport == "tcp":
            host, port = d.tcp
            c = SyncClient.connect(tcp=f"{host}:{port}", token_file=d.ready["token_file"], backend=backend)
        else:
            c = SyncClient.connect(d.socket, backend=backend)
    with c:
        h = c.open(working_dir=str(workdir))
        u, _ = c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        assert [n.id for n in c.get_branch(h.id)] == [u.id]
    assert not c.inner.connected
