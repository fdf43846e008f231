"""session/append and session/commit through a real daemon on a full tmpfs: typed errors (never
-32603), and after freeing space everything works and survives a daemon restart."""

import errno
import os
import sys

import pytest

from sessiondag_client import StorageFullError, connect_unix
from fault_fs import Filler, small_tmpfs
from store_helpers import git

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import DaemonProc, SchemaCheck  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def _daemon(state):
    return DaemonProc(["--socket", "--state-dir", state])


async def test_full_disk_over_rpc(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    check = SchemaCheck()
    with small_tmpfs(tmp_path / "fs", "4m") as fs:
        state = os.path.join(fs, "state")
        d = _daemon(state)
        try:
            c = await connect_unix(d.socket)
            c.observer = check
            h = await c.open(working_dir=str(work))
            acked, head = [], "ROOT"
            for i in range(5):
                n, head = await c.append(h.id, {"role": "user", "name": "u", "output": f"m{i}", "predecessor": head})
                acked.append(n.id)
            assert await c.commit(h.id)
            for i in range(5):
                n, head = await c.append(h.id, {"role": "user", "name": "u", "output": "w" * 3000, "predecessor": head})
                acked.append(n.id)
            filler = Filler(fs)
            filler.fill()
            with pytest.raises(StorageFullError) as ei:  # a spilled body needs a new file
                await c.append(h.id, {"role": "user", "name": "u", "output": "s" * 100_000, "predecessor": head})
            assert ei.value.rpc_code == -32031 and ei.value.rpc_data["errno"] == errno.ENOSPC
            with pytest.raises(StorageFullError) as ei:
                await c.commit(h.id)
            assert ei.value.rpc_code == -32031
            assert [x.id for x in await c.get_branch(h.id)] == acked  # nothing unacknowledged shows
            filler.free()
            n, head = await c.append(h.id, {"role": "user", "name": "u", "output": "s" * 100_000, "predecessor": head})
            acked.append(n.id)
            assert await c.commit(h.id)
            await c.aclose()
        finally:
            d.stop()
        r = git(os.path.join(state, "sessions", h.id, "git"), "fsck", "--strict", "--no-dangling")
        assert r.returncode == 0 and "error" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
        d = _daemon(state)  # a restart opens everything that was acknowledged
        try:
            c = await connect_unix(d.socket)
            c.observer = check
            await c.open(h.id, working_dir=str(work))
            assert [x.id for x in await c.get_branch(h.id)] == acked
            assert (await c.get_node(h.id, acked[-1])).output is not None
            await c.aclose()
        finally:
            d.stop()
    check.assert_ok()
