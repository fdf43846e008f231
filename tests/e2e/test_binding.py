"""Working-dir binding and file-change attribution, against a real daemon and real directories."""

import os
import shutil

import anyio
import pytest

from sessiondag_client import WorkingDirUnboundError
from sessiondag_client import connect_unix
from waiting import until

pytestmark = pytest.mark.anyio


async def _changes_on(c, sid, node_id):
    """Wait for an update of node_id that carries workspace_changes; return them."""
    while True:
        note = await c.next_notification("session/did_change", timeout=20)
        for ch in note["params"]["changes"]:
            if ch["kind"] == "update" and ch["node_id"] == node_id:
                wc = ch["fields"].get("metadata", {}).get("workspace_changes")
                if wc is not None:
                    return {e["path"]: e["change"] for e in wc}




async def test_delete_rename_restore_unbind_refuse_rebind(socket_daemon, workdir, tmp_path, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open(working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        l, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "ok", "predecessor": u.id})
        await c.commit(h.id)
        assert (await c.subscribe(h.id))["bound"] is True

        moved = tmp_path / "moved-away"
        os.rename(workdir, moved)
        note = await c.next_notification("session/did_unbind", timeout=20)
        assert note["params"] == {"session_id": h.id, "working_dir": os.path.realpath(workdir)}
        with pytest.raises(WorkingDirUnboundError) as ei:
            await c.append(h.id, {"role": "user", "name": "me", "output": "refused", "predecessor": l.id})
        assert ei.value.working_dir == os.path.realpath(workdir)
        # reading, rendering, listing and non-turn-starting writes still work
        assert [n.id for n in await c.get_branch(h.id)] == [u.id, l.id]
        assert (await c.render(h.id))[0]
        assert h.id in (await c.status())["unbound"]

        os.rename(moved, workdir)
        await c.next_notification("session/did_rebind", timeout=20)
        u2, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "back", "predecessor": l.id})

        shutil.rmtree(workdir)
        await c.next_notification("session/did_unbind", timeout=20)
        with pytest.raises(WorkingDirUnboundError):
            await c.append(h.id, {"role": "user", "name": "me", "output": "refused", "predecessor": u2.id})
        os.mkdir(workdir)
        await c.next_notification("session/did_rebind", timeout=20)
        # the recreated dir is watched again: changes inside the open turn are attributed
        (workdir / "after.txt").write_text("x")
        assert await _changes_on(c, h.id, u2.id) == {"after.txt": "added"}
    finally:
        await c.aclose()


async def test_changes_are_attributed_to_the_open_turn_and_between_turns_to_the_next(socket_daemon, workdir, check):
    (workdir / "keep.txt").write_text("v1")
    (workdir / "gone.txt").write_text("bye")
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open(working_dir=str(workdir))
        await c.subscribe(h.id)
        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "edit files", "predecessor": "ROOT"})
        (workdir / "new.txt").write_text("hello")
        (workdir / "keep.txt").write_text("v2")
        (workdir / "gone.txt").unlink()
        os.makedirs(workdir / ".git" / "objects")
        (workdir / ".git" / "objects" / "junk").write_text("ignored")
        (workdir / "__pycache__").mkdir()
        (workdir / "__pycache__" / "x.pyc").write_bytes(b"ignored")
        expected = {"new.txt": "added", "keep.txt": "modified", "gone.txt": "deleted"}
        seen = {}
        while not set(expected) <= set(seen):
            seen = await _changes_on(c, h.id, u.id)
        assert {k: seen[k] for k in expected} == expected
        assert not any(p.startswith((".git", "__pycache__")) for p in seen)
        l, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "done", "predecessor": u.id})
        await c.commit(h.id)

        # between turns: held back, then given to the next user turn
        (workdir / "between.txt").write_text("later")

        async def pending():
            return (await c.status())["pending_workspace_changes"].get(h.id, 0) > 0
        await anyio.sleep(0)  # noqa - yield once; the wait below is a deadline-bounded poll
        await until(pending, "the pending state", timeout=20)
        u2, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "next", "predecessor": l.id})
        assert await _changes_on(c, h.id, u2.id) == {"between.txt": "added"}
        node = await c.get_node(h.id, u2.id)
        assert node.metadata["workspace_changes"] == [{"path": "between.txt", "change": "added"}]
        first = await c.get_node(h.id, u.id)
        assert "between.txt" not in {e["path"] for e in first.metadata["workspace_changes"]}
    finally:
        await c.aclose()
