"""Client input never grows the daemon's tables: ids are validated before anything is keyed by them,
and per-session entries for sessions that do not exist are never kept."""

import anyio
import pytest

from sessiondag_client import connect_unix

pytestmark = pytest.mark.anyio

BAD_IDS = ["../x{}", "a/b{}", "{}\0z", ".hidden{}", "sp ace{}", "x" * 129 + "{}"]


def _calls(i: int, wd: str):
    """One request per method that takes a session id, with a distinct id: invalid for most,
    valid but naming no session for the rest."""
    bad = BAD_IDS[i % len(BAD_IDS)].format(i)
    ghost = f"ghost-{i}"
    for sid in (bad, ghost):
        yield "session/reset", {"session_id": sid}
        yield "session/resume", {"session_id": sid, "working_dir": wd}
        yield "session/append", {"session_id": sid, "node": {"role": "user", "name": "u", "output": "x",
                                                              "predecessor": "ROOT"}}
        yield "session/get_branch", {"session_id": sid}
        yield "session/subscribe", {"session_id": sid}
        yield "session/commit", {"session_id": sid}
        yield "agent/cancel", {"session_id": sid}
        yield "agent/prompt", {"session_id": sid, "content": "hi"}
    yield "session/open", {"session_id": bad, "working_dir": wd}
    yield "session/start", {"session_id": bad, "working_dir": wd}


async def test_distinct_invalid_ids_do_not_grow_the_tables(socket_daemon, workdir, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open("real", working_dir=str(workdir))
        await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        before = (await c.status())["tables"]
        errors = 0
        sem = anyio.Semaphore(64)

        async def one(method, params):
            nonlocal errors
            async with sem:
                try:
                    await c.call(method, params)
                except Exception as e:  # every one is refused with a typed error or invalid params
                    code = getattr(e, "rpc_code", getattr(e, "code", None))
                    assert code != -32603, (method, params, e)
                    errors += 1
        n = 0
        c.observer = None  # 20k schema validations would dominate the run; a sample is checked below
        async with anyio.create_task_group() as tg:
            for i in range(1120):
                for method, params in _calls(i, str(workdir)):
                    tg.start_soon(one, method, params)
                    n += 1
        assert n >= 20_000
        c.observer = check
        for method, params in _calls(7, str(workdir)):
            await one(method, params)
        st = await c.status()
        after = st["tables"]
        # agent/cancel answers {cancelled: false} rather than an error
        assert errors == n + 18 - 2 * 1121
        assert st["sessions_open"] == ["real"]
        for key in ("sessions", "locks", "pins", "tombstones", "write_queues", "writers", "subscribers",
                    "bindings", "pending_changes", "store_loaded", "render_caches", "turn_locks"):
            assert after[key] == before[key], (key, before[key], after[key])
        assert [x["session_id"] for x in await c.list()] == ["real"]
    finally:
        await c.aclose()


async def test_requests_in_flight_per_client_are_bounded(socket_daemon):
    """A client that floods slow requests is read no faster than its requests finish: the daemon
    keeps at most MAX_IN_FLIGHT of them, and every one is answered in the end."""
    from sessiondag.rpc.connection import MAX_IN_FLIGHT
    from sessiondag.rpc.transports import connect_unix as raw_connect
    from sessiondag.rpc import codec
    import orjson
    n = MAX_IN_FLIGHT + 500
    sock = raw_connect(socket_daemon.socket, timeout=30)
    try:
        frames = b"".join(codec.encode({"jsonrpc": "2.0", "id": i, "method": "daemon/ping", "params": {"delay": 1}})
                          for i in range(n))
        await anyio.to_thread.run_sync(sock.sendall, frames)
        c = await connect_unix(socket_daemon.socket)
        try:
            with anyio.fail_after(30):
                while True:
                    flood = [x for x in (await c.status())["clients"] if x["client_id"] != c.server_info["client_id"]]
                    if flood and flood[0]["in_flight"] > 0:
                        break
                    await anyio.sleep(0.01)
            assert flood[0]["in_flight"] <= MAX_IN_FLIGHT
        finally:
            await c.aclose()
        buf = codec.FrameBuffer()
        answered = set()
        with anyio.fail_after(60):
            while len(answered) < n:
                data = await anyio.to_thread.run_sync(sock.recv, 1 << 16)
                assert data, "connection closed early"
                for body in buf.feed(data):
                    msg = orjson.loads(body)
                    assert msg.get("result") == {}, msg
                    answered.add(msg["id"])
    finally:
        sock.close()


async def test_a_huge_client_info_is_not_kept(socket_daemon):
    from sessiondag.rpc.connection import MAX_CLIENT_INFO
    big = await connect_unix(socket_daemon.socket, client_name="x" * (4 * MAX_CLIENT_INFO))
    c = await connect_unix(socket_daemon.socket)
    try:
        infos = [x["client_info"] for x in (await c.status())["clients"]]
        assert {"truncated": True} in infos and all(len(str(i)) < MAX_CLIENT_INFO for i in infos)
    finally:
        await big.aclose()
        await c.aclose()
