"""Live updates: notifications between clients and from other processes; cancellation; lifecycle."""

import os
import signal
import subprocess
import sys
import textwrap

import orjson

import anyio
import pytest

from sessiondag_client import RequestCancelledError, SyncClient, connect, connect_unix

from e2e_support import git_fsck_all

pytestmark = pytest.mark.anyio


async def _appends_seen(c, sid, n):
    """Node ids of the next `n` appends announced for `sid`."""
    seen = []
    while len(seen) < n:
        note = await c.next_notification("session/did_change", timeout=20)
        assert note["params"]["session_id"] == sid
        seen += [ch["node"]["id"] for ch in note["params"]["changes"] if ch["kind"] == "append"]
    return seen


async def test_two_clients_see_each_others_appends(socket_daemon, workdir, check):
    a = await connect_unix(socket_daemon.socket)
    b = await connect_unix(socket_daemon.socket)
    a.observer = b.observer = check
    try:
        h = await a.open(working_dir=str(workdir))
        await a.subscribe(h.id)
        await b.subscribe(h.id)
        u, _ = await a.append(h.id, {"role": "user", "name": "a", "output": "from a", "predecessor": "ROOT"})
        assert await _appends_seen(b, h.id, 1) == [u.id]
        v, _ = await b.append(h.id, {"role": "llm", "name": "b", "output": "from b", "predecessor": u.id})
        assert await _appends_seen(a, h.id, 2) == [u.id, v.id]  # a sees its own too
        await b.name_branch(h.id, v.id, "main-line")
        note = await a.next_notification("session/did_change")
        assert note["params"]["changes"] == [{"kind": "name", "head_id": v.id, "name": "main-line"}]
        status = await a.status()
        assert len(status["clients"]) == 2
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_write_by_another_process_is_notified(socket_daemon, workdir, state_dir, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open(working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        await c.subscribe(h.id)
        script = textwrap.dedent(f"""
            from sessiondag import Call
            from sessiondag.store import SessionStore
            s = SessionStore({str(state_dir)!r}).session({h.id!r})
            n = s.append(Call("llm", "other-process", output="written elsewhere", predecessor={u.id!r}))
            s.commit_turn()
            print(n.id)
        """)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        other_id = out.stdout.strip()
        assert await _appends_seen(c, h.id, 1) == [other_id]
        assert [n.id for n in await c.get_branch(h.id)] == [u.id, other_id]
    finally:
        await c.aclose()


async def test_cancel_request(socket_daemon, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        async def in_flight():
            return (await c.status())["clients"][0]["in_flight"]  # counts the status call itself

        async def until_in_flight(n):
            with anyio.fail_after(10):
                while await in_flight() != n:
                    await anyio.sleep(0.01)

        # a client-side cancel (the scope around a call) sends $/cancelRequest and the daemon drops the work
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: c.ping(delay=30))
            await until_in_flight(2)
            tg.cancel_scope.cancel()
        await until_in_flight(1)
        rid_holder = {}
        # raw: cancel by id and see the -32800 answer
        async with anyio.create_task_group() as tg:
            async def slow():
                with pytest.raises(RequestCancelledError):
                    await c.call("daemon/ping", {"delay": 30})
                rid_holder["done"] = True
            tg.start_soon(slow)
            with anyio.fail_after(10):
                while not c._pending:
                    await anyio.sleep(0.01)
            rid = max(c._pending)
            await c.notify("$/cancelRequest", {"id": rid})
        assert rid_holder["done"]
        assert (await c.status())["clients"][0]["in_flight"] == 1  # only the status call itself
    finally:
        await c.aclose()


async def test_sigterm_commits_open_turns_and_cleans_up(socket_daemon, workdir, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    h = await c.open(working_dir=str(workdir))
    await c.append(h.id, {"role": "user", "name": "me", "output": "uncommitted", "predecessor": "ROOT"})
    assert socket_daemon.stop(signal.SIGTERM) == 0
    await c.aclose()
    log = subprocess.run(["git", "--git-dir", os.path.join(h.path, "git"), "log", "--format=%s"],
                         capture_output=True, text=True, check=True).stdout
    assert "uncommitted" in log
    assert not os.path.exists(socket_daemon.socket)
    assert not os.path.exists(os.path.join(socket_daemon.ready["state_dir"], "daemon.pid"))
    git_fsck_all(socket_daemon.ready["state_dir"])


async def test_idle_timeout_exits_when_no_client_is_attached(daemon_factory, state_dir):
    d = daemon_factory("--socket", "--state-dir", str(state_dir), "--idle-timeout", "0.5")
    c = await connect_unix(d.socket)
    await c.ping()
    await c.aclose()
    assert d.proc.wait(30) == 0


async def test_connect_auto_start_starts_one_daemon(state_dir, workdir):
    c1 = await connect(state_dir=str(state_dir), auto_start=True)
    c2 = await connect(state_dir=str(state_dir), auto_start=True)
    try:
        s1, s2 = await c1.status(), await c2.status()
        assert s1["pid"] == s2["pid"] and len(s2["clients"]) == 2
    finally:
        await c1.stop_daemon()
        await c1.aclose()
        await c2.aclose()


def test_sync_client(socket_daemon, workdir):
    with SyncClient.connect(socket_daemon.socket) as c:
        h = c.open(working_dir=str(workdir))
        u, head = c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        assert head == u.id
        assert [n.id for n in c.get_branch(h.id)] == [u.id]


async def test_concurrent_writers_readers_and_renders_on_one_session(socket_daemon, workdir, check):
    """Writes, reads, renders and views from several clients at once: every append lands exactly
    once, the chain stays intact, nothing deadlocks, git fsck passes."""
    clients = [await connect_unix(socket_daemon.socket) for _ in range(4)]
    for c in clients:
        c.observer = check
    try:
        h = await clients[0].open(working_dir=str(workdir))
        u, _ = await clients[0].append(h.id, {"role": "user", "name": "me", "output": "go", "predecessor": "ROOT"})
        appended = []

        async def writer(c, k):
            for i in range(40):
                n, _ = await c.append(h.id, {"role": "code", "name": f"tool-{k}", "caller": "ROOT", "output": i})
                appended.append(n.id)

        async def reader(c):
            for _ in range(20):
                await c.render(h.id)
                await c.view(h.id, "chat")
                await c.view(h.id, "tree")
                await c.get_branch(h.id)
                await c.list_branches(h.id)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer, clients[0], 0)
                tg.start_soon(writer, clients[1], 1)
                tg.start_soon(reader, clients[2])
                tg.start_soon(reader, clients[3])
        assert len(set(appended)) == 80
        for nid in appended:
            assert (await clients[2].get_node(h.id, nid)).caller == "ROOT"
        assert await clients[0].commit(h.id)
    finally:
        for c in clients:
            await c.aclose()
    git_fsck_all(socket_daemon.ready["state_dir"])


def test_sigterm_stops_a_stdio_daemon_whose_stdin_is_still_open(state_dir, workdir):
    from sessiondag.rpc import codec
    from e2e_support import SERVE
    p = subprocess.Popen(SERVE + ["--stdio", "--state-dir", str(state_dir)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stderr.readline().startswith(b"sessiondag: ready stdio")
    buf = codec.FrameBuffer()

    def call(rid, method, params):  # requests run concurrently: wait for each answer
        p.stdin.write(codec.encode({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        p.stdin.flush()
        got = []
        while not got:
            got += buf.feed(os.read(p.stdout.fileno(), 65536))
        msg = orjson.loads(got[0])
        assert msg["id"] == rid and "result" in msg, msg
    call(1, "session/open", {"session_id": "t", "working_dir": str(workdir)})
    call(2, "session/append", {"session_id": "t", "node": {"role": "user", "name": "me", "output": "pending turn",
                                                           "predecessor": "ROOT"}})
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == 0
    log = subprocess.run(["git", "--git-dir", os.path.join(str(state_dir), "sessions", "t", "git"), "log",
                          "--format=%s"], capture_output=True, text=True, check=True).stdout
    assert "pending turn" in log
    p.stdin.close()


async def test_a_journal_rotated_by_another_process_is_announced(socket_daemon, workdir, state_dir, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open(working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        await c.commit(h.id)
        await c.subscribe(h.id)
        script = textwrap.dedent(f"""
            from sessiondag import Call
            from sessiondag.store import SessionStore
            s = SessionStore({str(state_dir)!r}).session({h.id!r})
            n = s.append(Call("llm", "elsewhere", output="x" * 100, predecessor={u.id!r}))
            s.commit_turn()  # rotates: the threshold is 1 byte
            print(n.id)
        """)
        env = dict(os.environ, SESSIONDAG_JOURNAL_ROTATE_BYTES="1")
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
        other_id = out.stdout.strip()
        while True:
            note = await c.next_notification("session/did_change", timeout=20)
            kinds = {ch["kind"] for ch in note["params"]["changes"]}
            ids = {ch["node"]["id"] for ch in note["params"]["changes"] if ch["kind"] == "append"}
            if "reload" in kinds or other_id in ids:
                break
        assert note["params"]["head_id"] == other_id or other_id in ids
        assert [n.id for n in await c.get_branch(h.id)] == [u.id, other_id]
    finally:
        await c.aclose()


async def test_pending_notifications_and_connected_are_the_clients_public_view(daemon_factory, state_dir, workdir):
    """What the CLI's remote run and the ACP adapter use instead of the client's private fields: the
    notifications queued but not consumed (drained without waiting) and whether the link is alive."""
    d = daemon_factory("--socket", "--state-dir", str(state_dir))
    c = await connect_unix(d.socket)
    try:
        assert c.connected
        assert c.pending_notifications() == []
        h = await c.open(working_dir=str(workdir))
        await c.subscribe(h.id)
        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        v, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "yo", "predecessor": u.id})
        await c.ping()  # answered after both appends' notifications were sent, in order
        notes = c.pending_notifications()
        appended = [ch["node"]["id"] for n in notes if n["method"] == "session/did_change"
                    for ch in n["params"]["changes"] if ch["kind"] == "append"]
        assert appended == [u.id, v.id]
        assert c.pending_notifications() == []  # drained
        d.proc.kill()
        d.proc.wait()
        with anyio.fail_after(20):
            while c.connected:  # the reader task ends at EOF
                await anyio.sleep(0.01)
    finally:
        await c.aclose()
    assert not c.connected
