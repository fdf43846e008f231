"""Every RPC method against a real daemon subprocess; every answer validated against rpc_schema."""

import os

import pytest

from sessiondag_client import (HeadMismatchError, InvalidNodeError, InvalidSessionIdError, NotFoundError,
                               PredecessorMissingError, SessionExistsError, SessionResumeError)
from sessiondag.rpc.transports import default_token_path
from sessiondag_client import InvalidParamsError, MethodNotFoundError, connect_tcp, connect_unix, spawn_stdio
from sessiondag_client.client import AsyncClient

from e2e_support import git_fsck_all

pytestmark = pytest.mark.anyio


async def _client(kind, daemon_factory, state_dir, check) -> AsyncClient:
    if kind == "stdio":
        c = await spawn_stdio(str(state_dir))
    elif kind == "socket":
        d = daemon_factory("--socket", "--state-dir", str(state_dir))
        c = await connect_unix(d.socket)
    else:
        d = daemon_factory("--tcp", "127.0.0.1:0", "--state-dir", str(state_dir))
        c = await connect_tcp(*d.tcp, token_file=d.ready["token_file"])
    c.observer = check
    return c


@pytest.mark.parametrize("kind", ["stdio", "socket", "tcp"])
async def test_core_flow_on_every_transport(kind, daemon_factory, state_dir, workdir, check):
    c = await _client(kind, daemon_factory, state_dir, check)
    try:
        h = await c.open(working_dir=str(workdir))
        assert h.head_id == "ROOT" and h.working_dir == os.path.realpath(workdir)
        u, head = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        assert head == u.id and u.seq == 1
        llm, head = await c.append(h.id, {"role": "llm", "name": "m", "output": "hello", "caller": "ROOT",
                                          "predecessor": u.id, "metadata": {"gen_ai.usage.input_tokens": 5}},
                                   expected_head=u.id)
        assert [n.id for n in await c.get_branch(h.id)] == [u.id, llm.id]
        sub = await c.spawn_branch(h.id, llm.id, "task", name="sub", content="do it")
        msgs, manifest = await c.render(h.id)
        assert [m["role"] for m in msgs][-2:] == ["user", "assistant"] and isinstance(manifest, dict)
        assert sub in {b.head_id for b in await c.list_branches(h.id)}
        assert (await c.commit(h.id)) is not None
        assert await c.ping() == {}
        assert h.id in (await c.status())["sessions_open"]
    finally:
        await c.aclose()
    if kind == "stdio":  # exit → the daemon ends cleanly; nothing but frames went to stdout
        assert c.process.returncode == 0
    git_fsck_all(str(state_dir))
    assert check.count >= 10


async def test_every_session_method(socket_daemon, workdir, tmp_path, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        wd = str(workdir)
        h = await c.start("alpha", working_dir=wd)
        with pytest.raises(SessionExistsError) as ei:
            await c.start("alpha", working_dir=wd)
        assert ei.value.session_id == "alpha"
        assert (await c.resume("alpha", working_dir=wd)).id == "alpha"
        with pytest.raises(SessionResumeError) as ei:
            await c.resume("alpha", working_dir=str(tmp_path))
        assert ei.value.reason == "working_dir_mismatch" and ei.value.should_clear_handle is False
        with pytest.raises(SessionResumeError) as ei:
            await c.resume("ghost", working_dir=wd)
        assert ei.value.reason == "missing" and ei.value.should_clear_handle is True
        assert (await c.open("alpha", working_dir=str(tmp_path), allow_working_dir_mismatch=True)).id == "alpha"
        with pytest.raises(InvalidSessionIdError):
            await c.open("../etc", working_dir=wd)
        assert [s["session_id"] for s in await c.list(working_dir=wd)] == ["alpha"]

        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "q1", "predecessor": "ROOT"})
        with pytest.raises(PredecessorMissingError) as ei:
            await c.append(h.id, {"role": "user", "name": "me", "output": "no pred"})
        assert ei.value.role == "user"
        with pytest.raises(HeadMismatchError) as ei:
            await c.append(h.id, {"role": "llm", "name": "m", "predecessor": u.id}, expected_head="ROOT")
        assert ei.value.actual == u.id
        with pytest.raises(InvalidNodeError):
            await c.append(h.id, {"role": "robot", "name": "x", "predecessor": u.id})
        llm, _ = await c.append(h.id, {"role": "llm", "name": "m", "status": "running", "predecessor": u.id})
        tool, _ = await c.append(h.id, {"role": "code", "name": "ls", "caller": llm.id, "input": {"p": "."}})
        done = await c.update(h.id, tool.id, output=["a", "b"], status="completed", metadata={"ms": 3})
        assert done.output == ["a", "b"] and done.metadata["ms"] == 3
        await c.update(h.id, llm.id, output="answer", status="completed")
        assert (await c.get_node(h.id, llm.id)).output == "answer"
        with pytest.raises(NotFoundError) as ei:
            await c.get_node(h.id, "nope")
        assert ei.value.ident == "nope" and ei.value.what == "node"

        fork, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "q1 again", "predecessor": "ROOT"})
        await c.name_branch(h.id, fork.id, "retry")
        branches = await c.list_branches(h.id)
        assert {b.head_id: b.name for b in branches}[fork.id] == "retry"
        assert await c.checkout(h.id, llm.id) == llm.id
        assert [n.id for n in await c.get_branch(h.id)] == [u.id, llm.id]
        assert [n.id for n in await c.get_branch(h.id, fork.id)] == [fork.id]
        await c.name_branch(h.id, fork.id, None)

        sub = await c.spawn_branch(h.id, llm.id, "task", name="research", content="look")
        assert (await c.get_node(h.id, sub)).caller == llm.id

        u2, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "q2", "predecessor": llm.id})
        l2, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "a2", "predecessor": u2.id})
        msgs, _ = await c.render(h.id, format="anthropic")
        assert msgs and all(m["role"] in ("user", "assistant") for m in msgs)
        summary = await c.compact(h.id, [u.id, llm.id], "asked q1, got answer")
        assert summary.name == "context/summary" and summary.metadata
        chat = await c.view(h.id, "chat")
        assert isinstance(chat, list) and chat
        tree = await c.view(h.id, "tree")
        assert isinstance(tree, dict)
        sha = await c.commit(h.id, "turn one")
        assert sha and len(sha) == 40
        assert await c.commit(h.id) is None  # nothing new

        sub_info = await c.subscribe(h.id)
        assert sub_info["bound"] is True and sub_info["head_id"] == l2.id
        assert await c.unsubscribe(h.id) is True
        assert await c.unsubscribe(h.id) is False

        with pytest.raises(InvalidParamsError):
            await c.call("session/get_node", {"session_id": h.id})
        with pytest.raises(InvalidParamsError):
            await c.call("session/append", {"session_id": h.id, "node": {}, "bogus": 1})
        with pytest.raises(MethodNotFoundError):
            await c.call("session/nope", {})

        status = await c.status()
        assert status["version"] and any(cl["transport"] == "socket" for cl in status["clients"])
        assert await c.reset("alpha") is True
        assert await c.reset("alpha") is False
        with pytest.raises(SessionResumeError):
            await c.get_branch("alpha")
    finally:
        await c.aclose()
    git_fsck_all(socket_daemon.ready["state_dir"])


async def test_shutdown_then_exit_and_stop(socket_daemon, workdir, check):
    a = await connect_unix(socket_daemon.socket)
    a.observer = check
    h = await a.open(working_dir=str(workdir))
    await a.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
    await a.shutdown()
    with pytest.raises(Exception):
        await a.ping()
    await a.aclose()
    b = await connect_unix(socket_daemon.socket)
    b.observer = check
    assert (await b.stop_daemon())["stopping"] is True  # stopping commits the open turn
    await b.aclose()
    assert socket_daemon.proc.wait(30) == 0
    assert not os.path.exists(socket_daemon.socket)
    git_fsck_all(socket_daemon.ready["state_dir"])
    import subprocess
    log = subprocess.run(["git", "--git-dir", os.path.join(h.path, "git"), "log", "--oneline"],
                         capture_output=True, text=True).stdout
    assert log.count("\n") == 1


async def test_tcp_refuses_a_client_without_the_token(daemon_factory, state_dir, check):
    d = daemon_factory("--tcp", "127.0.0.1:0", "--state-dir", str(state_dir))
    assert oct(os.stat(d.ready["token_file"]).st_mode & 0o777) == "0o600"
    assert d.ready["token_file"] == default_token_path(str(state_dir))
    for token in (None, "wrong"):
        with pytest.raises(Exception):
            c = await connect_tcp(*d.tcp, token=token)
            await c.ping()
    # a client that skips initialize is closed too
    import anyio
    from sessiondag.rpc import codec
    s = await anyio.connect_tcp(*d.tcp)
    await s.send(codec.encode({"jsonrpc": "2.0", "id": 1, "method": "daemon/status", "params": {}}))
    data = b""
    with anyio.fail_after(10):
        try:
            while True:
                data += await s.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
            pass
    assert b"-32002" in data  # answered, then closed (the read loop above ended at EOF)
    await s.aclose()
    c = await connect_tcp(*d.tcp, token_file=d.ready["token_file"])
    c.observer = check
    assert (await c.status())["pid"] == d.proc.pid
    await c.aclose()


async def test_relative_working_dirs_are_refused(socket_daemon, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        for wd in ("", "relative/dir", "."):
            with pytest.raises(InvalidParamsError):
                await c.open(working_dir=wd)
    finally:
        await c.aclose()
