"""Two daemons in one process (two Daemon objects, two stores, two Unix sockets, one event loop) keep
their agent state apart: each has its own default provider (a scripted provider's script is consumed
per daemon), its own running turns, and a cancel sent to one never reaches the other's turn."""

import asyncio

import anyio
import pytest
import yaml

from sessiondag.rpc import agent_methods, session_methods  # noqa: F401 - registers the methods
from sessiondag.rpc.connection import Connection
from sessiondag.rpc.daemon import Daemon
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

pytestmark = pytest.mark.anyio


async def _serve(root, name):
    """A daemon on its own store and Unix socket, served in this process's event loop."""
    store = SessionStore(str(root / f"state-{name}"))
    d = Daemon(store)
    await d.start()
    path = str(root / f"{name}.sock")
    server = await asyncio.start_unix_server(lambda r, w: Connection(d, r, w, transport="socket").run(), path=path)
    return d, store, server, path


async def _until_turn_waits(client, sid):
    """Readiness: the hanging reply has streamed its text (the turn is running on the model)."""
    while True:
        note = await client.next_notification("agent/did_update", timeout=30)
        p = note["params"]
        if p.get("session_id") == sid and p.get("kind") == "text_delta" and "waiting" in (p.get("delta") or ""):
            return


async def test_two_daemons_in_one_process_do_not_share_agent_state(tmp_path, monkeypatch):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"replies": [
        {"match": "please hang", "text": "waiting", "hang": True},
        {"text": "first"},
        {"text": "second"},
    ]}))
    monkeypatch.setenv("SESSIONDAG_PROVIDER", "scripted")
    monkeypatch.setenv("SESSIONDAG_SCRIPT", str(script))
    monkeypatch.setenv("SESSIONDAG_CONFIG", str(tmp_path / "no-config.toml"))
    work = tmp_path / "work"
    work.mkdir()

    a, store_a, srv_a, path_a = await _serve(tmp_path, "a")
    b, store_b, srv_b, path_b = await _serve(tmp_path, "b")
    assert a.service.agents is not b.service.agents
    ca = await connect_unix(path_a)
    cb = await connect_unix(path_b)
    try:
        sa = (await ca.open(working_dir=str(work))).session_id
        sb = (await cb.open(working_dir=str(work))).session_id

        # each daemon builds its own default provider: both start at the script's first reply
        ra = await ca.agent_prompt(session_id=sa, content="hello")
        rb = await cb.agent_prompt(session_id=sb, content="hello")
        assert (ra["text"], rb["text"]) == ("first", "first")
        assert a.service.agents.provider is not b.service.agents.provider
        ra2 = await ca.agent_prompt(session_id=sa, content="hello again")
        assert ra2["text"] == "second"

        # a turn running on A is A's alone: B neither lists nor cancels it
        await ca.subscribe(sa)
        result = {}
        async with anyio.create_task_group() as tg:
            async def hang():
                result.update(await ca.agent_prompt(session_id=sa, content="please hang"))
            tg.start_soon(hang)
            await _until_turn_waits(ca, sa)
            assert (await ca.status())["running_turns"] == [sa]
            assert (await cb.status())["running_turns"] == []
            assert await cb.agent_cancel(session_id=sa) == {"cancelled": False}
            assert sa in a.service.agents.busy_sessions() and not b.service.agents.busy_sessions()
            assert (await ca.status())["running_turns"] == [sa]     # still running after B's cancel
            assert await ca.agent_cancel(session_id=sa) == {"cancelled": True}
        assert result["stop_reason"] == "cancelled"
        assert (await ca.status())["running_turns"] == []
    finally:
        await ca.aclose()
        await cb.aclose()
        for d, srv in ((a, srv_a), (b, srv_b)):
            srv.close()
            d.stop()
            await d.shutdown()
        store_a.close()
        store_b.close()
