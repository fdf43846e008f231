"""An adapter's worker thread (integrations/worker.py): SessiondagSession's async methods run there,
one at a time in the order they were called; errors reach the caller; a cancelled caller's write
still happens; the thread ends when idle and comes back with the next call."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sessiondag.integrations import worker as worker_mod
from sessiondag.integrations.agents import SessiondagSession
from sessiondag.integrations.worker import Worker
from sessiondag.store import SessionStore

pytestmark = pytest.mark.anyio


async def test_calls_run_in_order_on_one_thread_and_errors_reach_the_caller():
    w = Worker()
    seen: list[tuple[int, int]] = []

    def record(i: int) -> int:
        seen.append((i, threading.get_ident()))
        return i * 2
    assert await asyncio.gather(*(w.run(record, i) for i in range(20))) == [i * 2 for i in range(20)]
    assert [i for i, _ in seen] == list(range(20))
    assert len({t for _, t in seen}) == 1 and seen[0][1] != threading.get_ident()

    def boom() -> None:
        raise KeyError("no such thing")
    with pytest.raises(KeyError):
        await w.run(boom)
    assert await w.run(record, 21) == 42  # the thread goes on after an error


async def test_a_cancelled_add_items_is_still_written_before_the_next_call(tmp_path):
    store = SessionStore(str(tmp_path / "state"))
    s = SessiondagSession("chat", store)
    try:
        await s.add_items([{"role": "user", "content": "first"}])
        task = asyncio.ensure_future(s.add_items([{"role": "user", "content": "cancelled caller"}]))
        await asyncio.sleep(0)  # the call is queued on the worker
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        items = await s.get_items()  # runs after it, on the same thread
        assert [i["content"] for i in items] == ["first", "cancelled caller"]
    finally:
        s.close()
        store.close()


async def test_the_thread_ends_when_idle_and_starts_again(monkeypatch):
    monkeypatch.setattr(worker_mod, "IDLE", 0.01)
    w = Worker()
    assert not w.alive
    assert await w.run(lambda: 1) == 1
    gone = threading.Event()

    def watch() -> None:  # waits for the idle exit (a condition, no wall-clock assertion)
        while w.alive:
            threading.Event().wait(0.005)
        gone.set()
    threading.Thread(target=watch, daemon=True).start()
    assert await asyncio.to_thread(gone.wait, 60)
    assert await w.run(lambda: 2) == 2


async def test_async_saver_runs_on_its_worker_in_call_order(tmp_path):
    """AsyncSessiondagSaver's async methods run on its own worker thread (not the default executor
    of asyncio.to_thread): the thread is there after a call; an aput whose caller was cancelled is
    still written before the aget_tuple queued after it, which sees it."""
    from langgraph.checkpoint.base import empty_checkpoint

    from sessiondag.integrations.langgraph import AsyncSessiondagSaver

    saver = AsyncSessiondagSaver(tmp_path / "state", commit_every=1)
    try:
        conf = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

        def checkpoint(step: int) -> dict:
            cp = empty_checkpoint()
            v = saver.get_next_version(None, None)
            cp.update(channel_values={"messages": [f"m{step}"]}, channel_versions={"messages": v})
            return cp
        first = await saver.aput(conf, checkpoint(0), {"source": "loop", "step": 0, "parents": {}}, {})
        assert saver._worker.alive
        assert "sessiondag-langgraph" in {t.name for t in threading.enumerate()}
        second = checkpoint(1)
        task = asyncio.ensure_future(saver.aput(first, second, {"source": "loop", "step": 1, "parents": {}}, {}))
        await asyncio.sleep(0)  # the call is queued on the worker
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        got = await saver.aget_tuple(conf)
        assert got is not None and got.checkpoint["id"] == second["id"]
        assert [t.checkpoint["id"] async for t in saver.alist(conf)][0] == second["id"]
    finally:
        saver.close()
