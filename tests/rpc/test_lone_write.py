"""A lone session/append runs on the daemon's event loop (rpc/write_queue.py): durable before its
answer, and never at the cost of the loop waiting — a session lock another thread holds, records
another writer left to read, a body to spill or a second request in flight send the write the
queued way (a worker thread, group commit), and the loop keeps answering meanwhile. Of a loaded
session it is answered in the read loop's own turn, with no task (rpc/answer_now.py): the same
answer and typed errors; another request in flight or a session to load first take the ordinary way.

A real daemon core serving a real Unix socket in this process (so the test can see which thread
ran each fdatasync and how many writes ran on the loop), driven by the real Python client."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading

import anyio
import pytest

from sessiondag import Call
from sessiondag.rpc import session_methods  # noqa: F401  (registers session/*)
from sessiondag.rpc.connection import Connection
from sessiondag.rpc.daemon import Daemon
from sessiondag.store import SessionStore
from sessiondag_client import HeadMismatchError, InvalidNodeError, SessionDeletedError, connect_unix

pytestmark = pytest.mark.anyio


class Served:
    """A Daemon on a Unix socket in this process, and one client of it."""

    def __init__(self, tmp_path):
        self.state = str(tmp_path / "state")
        self.work = str(tmp_path / "work")
        os.makedirs(self.work)
        self.sock = str(tmp_path / "d.sock")

    async def __aenter__(self):
        self.store = SessionStore(self.state)
        self.daemon = Daemon(self.store, max_threads=4)
        await self.daemon.start()

        async def serve(reader, writer):
            await Connection(self.daemon, reader, writer, transport="socket").run()
        self.server = await asyncio.start_unix_server(serve, self.sock)
        self.client = await connect_unix(self.sock)
        self.sid = (await self.client.open(working_dir=self.work)).id
        return self

    async def __aexit__(self, *exc):
        await self.client.aclose()
        self.server.close()
        await self.daemon.shutdown()
        self.store.close()

    @property
    def inline(self) -> int:
        return self.daemon.service.writes.inline

    def session(self):
        return self.daemon.service.loaded(self.sid)


def node(text: str = "x", **kw):
    return {"role": "code", "name": "tool", "output": text, **kw}


@pytest.fixture
def syncs(monkeypatch):
    """Every fdatasync of this process: (thread id, fd)."""
    seen: list[tuple[int, int]] = []
    real = os.fdatasync

    def counted(fd):
        real(fd)
        seen.append((threading.get_ident(), fd))
    monkeypatch.setattr(os, "fdatasync", counted)
    return seen


async def test_a_lone_append_is_made_durable_on_the_loop_before_its_answer(tmp_path, syncs):
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))  # records the write policy
        before, inline = len(syncs), d.inline
        stored, head = await d.client.append(d.sid, node("second", predecessor=first.id))
        assert d.inline == inline + 1
        loop_thread = threading.get_ident()
        assert [t for t, _ in syncs[before:]] == [loop_thread]  # its one fdatasync, before the answer
        assert head == stored.id
        fresh = SessionStore(d.state)  # another reader of the files: the node is there
        try:
            assert fresh.session(d.sid).get_node(stored.id).output == "second"
        finally:
            fresh.close()


class Holding:
    """`async with Holding(session) as release:` another thread holds the session lock until `release()`."""

    def __init__(self, session):
        self.session, self.held, self.release = session, threading.Event(), threading.Event()

    def _hold(self):
        with self.session.lock:
            self.held.set()
            self.release.wait(60)

    async def __aenter__(self):
        self.thread = threading.Thread(target=self._hold)
        self.thread.start()
        await anyio.to_thread.run_sync(self.held.wait)
        return self.release.set

    async def __aexit__(self, *exc):
        self.release.set()
        await anyio.to_thread.run_sync(self.thread.join)


async def test_a_held_session_lock_sends_the_write_to_a_worker_and_the_loop_keeps_answering(tmp_path, syncs):
    async with Served(tmp_path) as d:
        await d.client.append(d.sid, node("first"))
        async with Holding(d.session()) as release:
            inline = d.inline
            done: list = []
            async with anyio.create_task_group() as tg:
                async def append():
                    done.append(await d.client.append(d.sid, node("waited")))
                tg.start_soon(append)
                for _ in range(3):  # the loop answers other requests while the write waits for the lock
                    await d.client.call("daemon/ping", {})
                assert not done
                release()
            assert d.inline == inline and done[0][0].output == "waited"


async def test_a_second_request_in_flight_sends_a_write_to_the_queue(tmp_path, syncs):
    async with Served(tmp_path) as d:
        other = (await d.client.open(working_dir=d.work)).id
        await d.client.append(d.sid, node("a"))
        await d.client.append(other, node("b"))
        async with Holding(d.session()) as release:
            inline = d.inline
            read: list = []
            async with anyio.create_task_group() as tg:
                async def get_branch():  # a read in flight (waiting for the lock in a worker), no write
                    read.append(await d.client.get_branch(d.sid))
                tg.start_soon(get_branch)
                await d.client.call("daemon/ping", {})  # the read is in flight by now
                assert not d.daemon.service.writes.writers
                stored, _ = await d.client.append(other, node("meanwhile"))  # a free session, 2 in flight
                assert d.inline == inline and stored.output == "meanwhile" and not read
                release()
            assert read


async def test_records_of_another_writer_are_read_first_the_queued_way(tmp_path, syncs):
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        other = SessionStore(d.state)  # another writer of the same session (its own lock file handle)
        try:
            theirs = other.session(d.sid).append(Call("code", "tool", output="theirs", predecessor=first.id))
        finally:
            other.close()
        inline = d.inline
        stored, head = await d.client.append(d.sid, node("ours", predecessor=theirs.id), expected_head=theirs.id)
        assert d.inline == inline  # the catch-up read the journal in a worker
        assert stored.predecessor == theirs.id and head == stored.id


async def test_a_body_that_spills_is_stored_by_a_worker(tmp_path, syncs):
    async with Served(tmp_path) as d:
        await d.client.append(d.sid, node("first"))
        inline = d.inline
        stored, _ = await d.client.append(d.sid, node("s" * 100_000))
        assert d.inline == inline
        assert stored.metadata.get("spilled") == ["output"]
        assert d.session().full_value(d.session().get_node(stored.id).output) == "s" * 100_000


class SlowDisk:
    """os.fdatasync made slower than the loop may wait for while `on` (a real fdatasync first)."""

    def __init__(self, monkeypatch):
        from sessiondag.rpc import write_queue
        self.on, self.delay, real = False, write_queue.LOOP_WRITE_LIMIT * 3, os.fdatasync

        def slow(fd):
            real(fd)
            if self.on:
                threading.Event().wait(self.delay)
        monkeypatch.setattr(os, "fdatasync", slow)


async def test_one_slow_fdatasync_leaves_the_next_lone_writes_on_the_loop(tmp_path, monkeypatch):
    disk = SlowDisk(monkeypatch)
    async with Served(tmp_path) as d:
        stored, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        inline = d.inline
        disk.on = True
        stored, _ = await d.client.append(d.sid, node("slow", predecessor=stored.id))  # on the loop, slowly
        disk.on = False
        for i in range(3):
            stored, _ = await d.client.append(d.sid, node(f"after {i}", predecessor=stored.id))
        assert d.inline == inline + 4  # a spike is not a slow disk: no thread hops for the next writes
        assert [n.output for n in await d.client.get_branch(d.sid)][-4:] == ["slow", "after 0", "after 1", "after 2"]


async def test_a_disk_that_stays_slow_sends_lone_writes_to_the_workers_until_it_is_fast(tmp_path, monkeypatch):
    from sessiondag.rpc import write_queue
    disk = SlowDisk(monkeypatch)
    async with Served(tmp_path) as d:
        stored, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        d.daemon.service.writes.pace = write_queue.DiskPace()  # no history: only this test's writes count
        inline = d.inline
        disk.on = True
        half = write_queue.WINDOW // 2
        outputs = [f"slow {i}" for i in range(half + 3)]
        for text in outputs:
            stored, _ = await d.client.append(d.sid, node(text, predecessor=stored.id))
        assert d.inline == inline + half  # the median of the last writes is over the limit: workers
        disk.on = False
        inline = d.inline
        for i in range(10 * write_queue.WINDOW):  # the workers' fast writes bring the loop back (a loaded
            outputs.append(f"fast {i}")           # machine may make a few of them slow too)
            stored, _ = await d.client.append(d.sid, node(outputs[-1], predecessor=stored.id))
            if d.inline > inline:
                break
        assert d.inline == inline + 1
        assert [n.output for n in await d.client.get_branch(d.sid)][-len(outputs):] == outputs


async def test_queued_writes_run_on_the_daemons_thread_tokens(tmp_path, syncs):
    """A queued batch takes one of the store limiter's tokens (`--threads`): with every token out it
    waits for one, and a burst from many sessions never starts more write threads than tokens."""
    async with Served(tmp_path) as d:
        await d.client.append(d.sid, node("first"))
        limiter = d.daemon.service.writes.limiter
        holders = [object() for _ in range(int(limiter.total_tokens))]
        for h in holders:
            limiter.acquire_on_behalf_of_nowait(h)
        done: list = []
        async with Holding(d.session()) as release:  # a held session lock: the write is queued
            async with anyio.create_task_group() as tg:
                async def append():
                    done.append(await d.client.append(d.sid, node("waited")))
                tg.start_soon(append)
                await d.client.call("daemon/ping", {})
                release()
                for _ in range(3):  # the loop answers; the batch waits for a token
                    await d.client.call("daemon/ping", {})
                assert not done
                for h in holders:
                    limiter.release_on_behalf_of(h)
        assert done[0][0].output == "waited"
        sids = [(await d.client.open(working_dir=d.work)).id for _ in range(12)]
        stored: list = []

        async def add(sid, text):
            stored.append((sid, text, (await d.client.append(sid, node(text)))[0].id))
        async with anyio.create_task_group() as tg:
            for sid in sids:
                for i in range(5):
                    tg.start_soon(add, sid, f"{sid} {i}")
        assert 0 < d.daemon.service.writes.threads.peak <= limiter.total_tokens
        assert len(stored) == 60
        for sid, text, nid in stored:
            assert (await d.client.get_node(sid, nid)).output == text


async def test_a_lone_append_whose_fdatasync_fails_is_refused_and_left_nowhere(tmp_path, monkeypatch):
    """The lone path writes its one record with the journal's own fdatasync (no group): when that
    fdatasync fails (EIO), the client gets the typed storage error, the node is neither in the
    daemon's graph nor in the files, and the next append lands where it would have."""
    import errno

    from sessiondag_client.wire.errors import StorageError
    real, fail = os.fdatasync, []

    def flaky(fd):
        if fail:
            fail.pop()
            raise OSError(errno.EIO, "Input/output error")
        real(fd)
    monkeypatch.setattr(os, "fdatasync", flaky)
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        inline = d.inline
        fail.append(1)
        with pytest.raises(StorageError):
            await d.client.append(d.sid, node("lost", predecessor=first.id))
        assert d.inline == inline + 1  # it ran on the loop
        assert [n.output for n in await d.client.get_branch(d.sid)] == ["first"]
        after, head = await d.client.append(d.sid, node("after", predecessor=first.id))
        assert head == after.id
        fresh = SessionStore(d.state)  # the files: no trace of the refused node
        try:
            assert [c.output for c in fresh.session(d.sid).get_branch()] == ["first", "after"]
        finally:
            fresh.close()


# --- answered in the read loop's turn (rpc/answer_now.py) ---------------------------------------
def connection(d):
    (conn,) = d.daemon.service.connections
    return conn


async def test_a_lone_append_is_answered_in_the_read_loops_turn_and_durable_before(tmp_path, syncs):
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        conn = connection(d)
        now, seen = conn.answered_now, len(syncs)
        stored, head = await d.client.append(d.sid, node("second", predecessor=first.id))
        assert conn.answered_now == now + 1 and not conn.tasks
        assert len(syncs) == seen + 1 and head == stored.id and stored.seq == first.seq + 1
        fresh = SessionStore(d.state)  # another reader of the files: the node is there
        try:
            assert fresh.session(d.sid).get_node(stored.id).output == "second"
        finally:
            fresh.close()


async def test_its_errors_are_the_typed_ones_and_write_nothing(tmp_path):
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        conn = connection(d)
        now = conn.answered_now
        with pytest.raises(HeadMismatchError):
            await d.client.append(d.sid, node("late", predecessor=first.id), expected_head="0" * 24)
        with pytest.raises(InvalidNodeError):
            await d.client.append(d.sid, node("orphan", predecessor="f" * 24))
        assert conn.answered_now == now + 2
        assert [n.output for n in await d.client.get_branch(d.sid)] == ["first"]
        stored, head = await d.client.append(d.sid, node("next", predecessor=first.id))  # and the next one lands
        assert head == stored.id and stored.seq == first.seq + 1


async def test_an_append_beside_a_request_in_flight_takes_the_ordinary_way(tmp_path):
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        conn = connection(d)
        now = conn.answered_now
        async with anyio.create_task_group() as tg:
            tg.start_soon(d.client.ping, 60)  # in flight while the append comes, however slow the machine
            with anyio.fail_after(30):
                while not conn.tasks:
                    await anyio.sleep(0.005)
            stored, _ = await d.client.append(d.sid, node("beside", predecessor=first.id))
            tg.cancel_scope.cancel()  # the ping: $/cancelRequest
        assert conn.answered_now == now and stored.output == "beside"


async def test_a_session_not_loaded_yet_is_loaded_the_ordinary_way(tmp_path):
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        d.daemon.service.drop(d.sid)  # evicted: the next append must load it first
        conn = connection(d)
        now = conn.answered_now
        stored, _ = await d.client.append(d.sid, node("after load", predecessor=first.id))
        assert conn.answered_now == now and stored.predecessor == first.id


async def test_a_directory_removed_under_it_acknowledges_nothing_and_is_announced(tmp_path):
    # which way the append goes depends on whether the daemon's watcher saw the removal first (then
    # the session is buried: the ordinary way) or the append's own presence check does: both refuse
    async with Served(tmp_path) as d:
        first, _ = await d.client.append(d.sid, node("first", predecessor="ROOT"))
        await d.client.subscribe(d.sid)
        shutil.rmtree(os.path.join(d.state, "sessions", d.sid))
        with pytest.raises(SessionDeletedError):
            await d.client.append(d.sid, node("lost", predecessor=first.id))
        note = await d.client.next_notification("session/did_delete", timeout=30)
        assert note["params"]["session_id"] == d.sid
        assert d.daemon.service.loaded(d.sid) is None


async def test_a_ping_is_answered_in_the_turn_and_one_with_a_delay_stays_cancellable(tmp_path):
    async with Served(tmp_path) as d:
        conn = connection(d)
        now = conn.answered_now
        assert await d.client.ping() == {}
        assert conn.answered_now == now + 1
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.2):
                await d.client.ping(30)  # the ordinary way: a task, cancelled by $/cancelRequest
        with anyio.fail_after(30):
            while conn.tasks:
                await anyio.sleep(0.005)
        assert conn.answered_now == now + 1
