"""sync.auto_push: the daemon pushes a session after each turn commit, in the background — a push
stuck on a remote that never answers does not hold a turn up — and reports each outcome to the
subscribers (did_change {kind: sync}) and in daemon/status."""

import os
import socket
import subprocess
import sys
import threading

import pytest

from e2e_support import next_change, serving
from waiting import until

pytestmark = pytest.mark.anyio


async def _subscribed(c, workdir, sid):
    h = await c.open(sid, working_dir=str(workdir))
    await c.subscribe(h.id)
    return h


def _pushing_to(remote):
    return {**os.environ, "SESSIONDAG_SYNC_AUTO_PUSH": remote}


async def test_auto_push_after_each_commit(tmp_path, workdir, check):
    repo = str(tmp_path / "sessions.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    async with serving(tmp_path / "state", check, _pushing_to(repo)) as (_, c):
        h = await _subscribed(c, workdir, "auto-1")
        await c.append(h.id, {"role": "user", "name": "a", "output": "hi", "predecessor": "ROOT"})
        sha = await c.commit(h.id)
        ch = await next_change(c, h.id, "sync")
        assert ch["status"] == "pushed"
        refs = subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True, text=True).stdout
        assert f"{ch['commit']} commit\trefs/sessiondag/auto-1/main" in refs
        # the turn's commit, or the one after it that records the working dir's identity (first push)
        subprocess.run(["git", "-C", repo, "merge-base", "--is-ancestor", sha, ch["commit"]], check=True)
        st = await c.status()
        assert st["auto_push"]["remote"] == repo and st["auto_push"]["last"]["auto-1"]["commit"] == ch["commit"]


async def test_a_stuck_or_failing_remote_never_holds_a_turn(tmp_path, workdir, check):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    accepted = []
    threading.Thread(target=lambda: accepted.append(silent.accept()[0]), daemon=True).start()
    url = f"git://127.0.0.1:{silent.getsockname()[1]}/sessions.git"   # accepts, never answers
    async with serving(tmp_path / "state", check, _pushing_to(url)) as (_, c):
        h = await _subscribed(c, workdir, "auto-2")
        u, _ = await c.append(h.id, {"role": "user", "name": "a", "output": "one", "predecessor": "ROOT"})
        await c.commit(h.id)
        # the push is now stuck on the silent remote; turns go on
        u2, _ = await c.append(h.id, {"role": "user", "name": "a", "output": "two", "predecessor": u.id})
        assert await c.commit(h.id) is not None
        assert (await c.status())["auto_push"]["failures"] == {}
        # the push must have connected before the remote hangs up: closing only the listener would
        # leave a connection accepted a moment later hanging until the transfer's idle timeout
        await until(lambda: accepted, "the automatic push to connect to the silent remote")
        for conn in accepted:            # the remote hangs up: the stuck push fails, typed, reported
            conn.close()
        silent.close()
        ch = await next_change(c, h.id, "sync")
        assert ch["status"] == "failed" and ch["error"]["code"] == "sync_unreachable"
        st = await c.status()
        assert st["auto_push"]["failures"]["auto-2"]["code"] == "sync_unreachable"
        assert (await c.get_node(h.id, u2.id)).output == "two"


async def test_auto_push_refuses_a_secret_in_the_workspace_snapshot(tmp_path, workdir, check):
    """A file another process wrote into the working dir between turns is in the turn's workspace
    checkpoint: the automatic push refuses it like a secret in a node (typed, reported, nothing sent)."""
    repo = str(tmp_path / "sessions.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    script = tmp_path / "script.yaml"
    script.write_text("- repeat: true\n  text: done\n")
    env = {**os.environ, "SESSIONDAG_SYNC_AUTO_PUSH": repo, "SESSIONDAG_PROVIDER": "scripted",
           "SESSIONDAG_SCRIPT": str(script)}
    async with serving(tmp_path / "state", check, env) as (_, c):
        h = await _subscribed(c, workdir, "auto-3")
        (workdir / "deploy.env").write_text("GITHUB_TOKEN=ghp_" + "Zq7Kx2Wm9Pt4Rv6Ys1Lb8Nc3Hd5Jf0Ga2TeQ4" + "\n")
        r = await c.agent_prompt(h.id, "hello")
        ch = await next_change(c, h.id, "sync")
        while ch["status"] != "failed":     # the snapshot before the first turn has its own commit
            ch = await next_change(c, h.id, "sync")
        assert ch["error"]["code"] == "secret_in_session"
        assert ch["error"]["data"]["field"] == "workspace file deploy.env"
        assert ch["error"]["data"]["node_id"] in (None, r["user_node_id"])
        refs = subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True, text=True).stdout
        assert "refs/sessiondag/auto-3/" not in refs


async def test_auto_push_rules_per_session_and_per_working_dir(tmp_path, check):
    """No setting: a session pushes only where `sync auto-push` says — its own rule, else its
    working dir's; `off` on a session beats its working dir's rule (the CLI writes the rules, a
    real daemon reads them at each commit)."""
    repo = str(tmp_path / "sessions.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    state = tmp_path / "state"
    wd_a, wd_b = tmp_path / "a", tmp_path / "b"
    wd_a.mkdir()
    wd_b.mkdir()
    cli = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())", "sync",
           "auto-push", "--state-dir", str(state)]
    env = {k: v for k, v in os.environ.items() if k != "SESSIONDAG_SYNC_AUTO_PUSH"}
    for args in (["--session", "rule-1", repo], ["--working-dir", str(wd_b), repo], ["--session", "off-3", "off"]):
        subprocess.run([*cli, *args], check=True, capture_output=True, env=env)
    async with serving(state, check, env) as (_, c):
        heads = {}
        for sid, wd in (("rule-1", wd_a), ("dir-2", wd_b), ("off-3", wd_b), ("none-4", wd_a)):
            h = await c.open(sid, working_dir=str(wd))
            await c.subscribe(h.id)
            await c.append(h.id, {"role": "user", "name": "a", "output": "hi", "predecessor": "ROOT"})
            heads[sid] = await c.commit(h.id)
        pushed = set()
        while pushed != {"rule-1", "dir-2"}:
            note = await c.next_notification("session/did_change", timeout=60)
            for ch in note["params"]["changes"]:
                if ch["kind"] == "sync":
                    assert ch["status"] in ("pushed", "up_to_date"), ch
                    pushed.add(note["params"]["session_id"])
        st = (await c.status())["auto_push"]
        assert st["remote"] is None and set(st["last"]) == {"rule-1", "dir-2"} and st["failures"] == {}
        refs = subprocess.run(["git", "-C", repo, "for-each-ref", "--format=%(refname)"], capture_output=True,
                              text=True).stdout.split()
        assert {r.split("/")[2] for r in refs} == {"rule-1", "dir-2"}


async def test_a_power_loss_after_automatic_pushes_loses_nothing_pushed(tmp_path, workdir, check):
    """Automatic pushes, then one more turn whose push is off (its snapshot unsynced), the daemon
    killed and the power lost (what that may do to the unsynced files done by hand, as
    tests/store/test_snapshot_sync.py does): reopened, no node is lost, and the next push
    fast-forwards the remote from what the automatic ones sent; `git fsck --strict` clean."""
    import signal

    from sessiondag.core.settings import Settings
    from sessiondag.store import SessionStore
    from sessiondag.store.snapshot_sync import MARKER
    from sessiondag.sync import push, remotes
    from sync.conftest import fsck
    from sync.test_power_loss_push import _lose_power

    repo = str(tmp_path / "sessions.git")
    subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
    state = tmp_path / "state"
    ids, last_pushed = [], None
    async with serving(state, check, _pushing_to(repo)) as (d, c):
        h = await _subscribed(c, workdir, "auto-pl")
        head = "ROOT"
        for i in range(3):
            u, _ = await c.append(h.id, {"role": "user", "name": "a", "output": f"turn {i}", "predecessor": head})
            ids.append(u.id)
            head = u.id
            await c.commit(h.id)
            ch = await next_change(c, h.id, "sync")
            assert ch["status"] in ("pushed", "up_to_date"), ch   # up to date: an earlier push took it along
            last_pushed = ch["commit"]
        git_dir = os.path.join(str(state), "sessions", "auto-pl", "git")

        async def idle() -> bool:   # the last push done: it reported the session's head (none queued)
            head = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "refs/heads/main"],
                                  capture_output=True, text=True, check=True).stdout.strip()
            last = (await c.status())["auto_push"]["last"].get("auto-pl") or {}
            return last.get("commit") == head
        await until(idle, "the automatic pushes to settle")
        refs = subprocess.run(["git", "-C", repo, "for-each-ref"], capture_output=True, text=True).stdout
        last_pushed = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "refs/heads/main"],
                                     capture_output=True, text=True, check=True).stdout.strip()
        assert f"{last_pushed} commit\trefs/sessiondag/auto-pl/main" in refs
        remotes.set_auto_push(str(state), "off", session_id="auto-pl")     # read at the next commit
        u, _ = await c.append(h.id, {"role": "user", "name": "a", "output": "not pushed", "predecessor": head})
        ids.append(u.id)
        assert await c.commit(h.id) is not None
        assert os.path.exists(os.path.join(git_dir, MARKER)), "the last turn's snapshot was synced: no loss to make"
        d.stop(signal.SIGKILL)
    zeroed = _lose_power(git_dir)
    assert zeroed, "nothing written since the marker to damage"

    store = SessionStore(str(state))
    try:
        s = store.session("auto-pl")
        assert all(i in s.graph.nodes for i in ids)                   # nothing lost, the unpushed turn rebuilt
        assert not os.path.exists(os.path.join(git_dir, MARKER))
        on_remote = subprocess.run(["git", "-C", repo, "rev-parse", "refs/sessiondag/auto-pl/main"],
                                   capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["git", "-C", repo, "merge-base", "--is-ancestor", last_pushed, on_remote], check=True)
        subprocess.run(["git", "--git-dir", git_dir, "merge-base", "--is-ancestor", on_remote, "refs/heads/main"],
                       check=True)                                   # what the remote holds is still here
        got = push.push(store, remotes.resolve(store.state_dir, repo), "auto-pl", Settings())
        assert got["status"] in ("pushed", "up_to_date")
        assert got["old"] == on_remote                               # a fast-forward from what was pushed
        fsck(git_dir)
        fsck(repo)
    finally:
        store.close()
