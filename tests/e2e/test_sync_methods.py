"""session/push, session/pull, remote/list through a real daemon: typed refusals over the wire, a
pull announced to subscribers as did_change {kind: reload}."""

import os
import subprocess

import pytest

from sessiondag.core.settings import Settings
from sessiondag.store import SessionStore
from sessiondag.sync import pull as sync_pull, push as sync_push, remotes
from sessiondag_client import connect_unix
from sessiondag_client.wire.errors import NonFastForwardError, SecretInSessionError

from sessiondag import Call

pytestmark = pytest.mark.anyio


async def test_push_pull_list_through_the_daemon(socket_daemon, workdir, tmp_path, check):
    repo = str(tmp_path / "sessions.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open("shared-1", working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "a", "output": "hello", "predecessor": "ROOT"})
        await c.commit(h.id)
        dry = await c.push(h.id, repo, dry_run=True)
        assert dry["status"] == "dry_run" and dry["objects"] > 0
        assert (await c.push(h.id, repo))["status"] == "pushed"
        listed = await c.remote_list(repo)
        assert [s["session_id"] for s in listed["sessions"]] == ["shared-1"]

        await c.append(h.id, {"role": "user", "name": "a", "output": "ghp_" + "x1Y2z3" * 7, "predecessor": u.id})
        await c.commit(h.id)
        with pytest.raises(SecretInSessionError) as e:
            await c.push(h.id, repo)
        assert e.value.code == "secret_in_session" and e.value.field == "output"
        other = SessionStore(str(tmp_path / "laptop"))
        r = remotes.resolve(other.state_dir, repo)
        sync_pull.clone(other, r, "shared-1", working_dir=str(workdir))
        s = other.session("shared-1")
        more = s.append(Call("user", "b", output="from the laptop", predecessor=s.head_id))
        s.commit_turn()
        sync_push.push(other, r, "shared-1", Settings())

        with pytest.raises(NonFastForwardError):
            await c.push(h.id, repo, allow_secrets=True)

        await c.subscribe(h.id)
        got = await c.pull(h.id, repo)
        assert got["status"] == "merged" and got["added"] == 1
        note = await c.next_notification("session/did_change", timeout=30)
        while {"kind": "reload"} not in note["params"]["changes"]:
            note = await c.next_notification("session/did_change", timeout=30)
        node = await c.get_node(h.id, more.id)
        assert node.output == "from the laptop"
        other.close()
    finally:
        await c.aclose()


async def test_a_push_sends_what_a_finished_turn_left_uncommitted(socket_daemon, workdir, tmp_path, check):
    """A write acknowledged after the last turn commit (a compaction's summary, a node added between
    turns) goes with the push the user asks for, as a pull commits it first; a running turn's
    records wait for its own commit. (The editors' Share Session pushed without it.)"""
    repo = str(tmp_path / "sessions.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    other = SessionStore(str(tmp_path / "laptop"))
    try:
        h = await c.open("shared-2", working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "a", "output": "hello", "predecessor": "ROOT"})
        await c.commit(h.id)
        late, _ = await c.append(h.id, {"role": "code", "name": "note", "output": "a summary", "caller": u.id})
        assert (await c.push(h.id, repo, dry_run=True))["status"] == "dry_run"   # a dry run commits nothing
        assert (await c.push(h.id, repo))["status"] == "pushed"
        r = remotes.resolve(other.state_dir, repo)
        sync_pull.clone(other, r, "shared-2", working_dir=str(tmp_path))
        assert other.session("shared-2").graph.nodes[late.id].output == "a summary"

        running, _ = await c.append(h.id, {"role": "user", "name": "a", "output": "next", "predecessor": u.id,
                                           "status": "running"})
        assert (await c.push(h.id, repo))["status"] in ("pushed", "up_to_date")
        assert sync_pull.pull(other, r, "shared-2")["status"] == "up_to_date"   # the running turn stayed here
        assert running.id not in other.session("shared-2").graph.nodes
    finally:
        other.close()
        await c.aclose()
