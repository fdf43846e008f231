"""A batch of queued writes whose one fdatasync fails: every writer gets the typed error (none hangs,
none is acknowledged), and the session takes writes again once the disk does."""

import errno
import os

import anyio
import pytest

from sessiondag import Call
from sessiondag.core.errors import StorageError
from sessiondag.rpc.daemon import Daemon
from sessiondag.store import SessionStore


pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_failed_group_fdatasync_answers_every_queued_write(tmp_path, monkeypatch):
    store = SessionStore(str(tmp_path / "state"))
    h = store.open_session(None, working_dir=str(tmp_path))
    d = Daemon(store, max_threads=4)
    await d.start()
    svc = d.service
    s = await svc.get(h.id)
    first = await svc.submit(s, lambda: s.append(Call("user", "u", output="kept", predecessor="ROOT")))

    real = os.fdatasync

    def failing(fd):  # the disk refuses the batch's one fdatasync
        raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(os, "fdatasync", failing)
    answers: list = []

    async def write(i):
        try:
            answers.append(await svc.submit(s, lambda: s.append(Call("code", f"w{i}", output=i))))
        except StorageError as e:
            answers.append(e)
    with anyio.fail_after(30):  # before the fix the futures were never answered
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(write, i)
    assert len(answers) == 5 and all(isinstance(a, StorageError) and a.errno == errno.EIO for a in answers)
    assert [n.id for n in s.get_branch()] == [first.id]   # nothing unacknowledged is visible

    monkeypatch.setattr(os, "fdatasync", real)
    again = await svc.submit(s, lambda: s.append(Call("code", "after", output=1)))
    assert s.get_node(again.id).name == "after"
    reopened = SessionStore(str(tmp_path / "state")).session(h.id)
    assert {n.name for n in reopened.graph.nodes.values()} >= {"u", "after"}
    assert not {f"w{i}" for i in range(5)} & {n.name for n in reopened.graph.nodes.values()}
    await d.shutdown()
    store.close()
