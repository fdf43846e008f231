"""The live document hears every change through the daemon alone (report/follow.py), with nothing
reading the disk unasked: a LiveDocument on its own store is fed only by a real daemon's
notifications (the subscription `sessiondag view` makes) while other processes change the session
— turns run through the daemon, turns run in-process by another process (the daemon's session-dir
watcher), a fork, a branch named from the CLI, a compaction written through the library API,
another machine's turns pulled by the CLI and by the daemon, and all of it again with the journal
rotated after every commit. After each change the document becomes the one a fresh build gives,
within a minute, without the test calling `changed()`."""

from __future__ import annotations

import json
import subprocess
import threading

import anyio
import pytest

from report_support import comparable, compact_first_turn, first_turn, fresh, sd
from sessiondag.report import Limits
from sessiondag.report.follow import follow
from sessiondag.report.live import LiveDocument
from sessiondag.store import SessionStore
from sessiondag_client import connect


@pytest.fixture(params=["default", "rotating"])
def followed(request, tmp_path, monkeypatch):
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))          # the daemon follow() starts, and the CLI
    monkeypatch.setenv("SESSIONDAG_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    if request.param == "rotating":
        monkeypatch.setenv("SESSIONDAG_JOURNAL_ROTATE_BYTES", "1")   # every commit rotates the journal
    home, wd, sid = first_turn(tmp_path)
    store = SessionStore(home)
    live = LiveDocument(store.session(sid), Limits())
    ready, stopped = threading.Event(), []

    def run() -> None:
        try:
            stopped.append(anyio.run(follow, str(home), sid, live.changed, ready.set, live.text))
        except BaseException as e:  # noqa: BLE001 - reported by the test
            stopped.append(repr(e))
            ready.set()
    t = threading.Thread(target=run, name="test-follow", daemon=True)
    t.start()
    try:
        assert ready.wait(120) and not stopped, stopped
        yield home, wd, sid, live, tmp_path
    finally:
        sd(["daemon", "stop", "--state-dir", home], home=home, cwd=wd, check=False)
        t.join(60)
        live.close()
        store.close()
    assert not t.is_alive()


def shows(live, home, sid, what):
    """Wait (on the document's own notifications, up to a minute) until it is what a build gives."""
    want = fresh(home, sid)
    got = {}

    def same():
        got.update(comparable(*live.current()))
        return all(got[k] == want[k] for k in want)
    with live.cond:
        ok = live.cond.wait_for(same, 60)
    assert ok, f"{what}: the live document never showed it: " + "; ".join(_diff(k, got[k], want[k]) for k in want
                                                                         if got[k] != want[k])


def _diff(key, got, want):
    """Where a part of the document differs from a build's (the rows' columns, the chunks' bodies)."""
    if key == "rows":
        return "rows: " + ", ".join(f"{c}[{i}] {a!r} != {b!r}" for c in want for i, (a, b) in
                                    enumerate(zip(got.get(c, ()), want[c])) if a != b)
    if key == "chunks":
        return "bodies: " + ", ".join(f"{w.get('id')} {k}: {g.get(k)!r} != {w[k]!r}" for ga, wa in zip(got, want)
                                      for g, w in zip(ga, wa) for k in w if g.get(k) != w[k])
    return f"{key}: {got!r} != {want!r}"


def test_every_change_reaches_the_document_through_the_daemon(followed):
    home, wd, sid, live, tmp = followed
    script, retry = tmp / "s.json", tmp / "r.json"
    script.write_text(json.dumps([{"text": "an answer, through the daemon"}]))
    retry.write_text(json.dumps([{"text": "the retried answer"}]))
    base = ["--state-dir", home, "--session", sid, "--provider", "scripted"]
    for i in range(3):
        sd(["run", *base, "--script", script, f"through the daemon {i}"], home=home, cwd=wd)
        shows(live, home, sid, f"turn {i} through the daemon")
        sd(["run", *base, "--in-process", "--script", script, f"in another process {i}"], home=home, cwd=wd)
        shows(live, home, sid, f"turn {i} run in another process")
    sd(["run", *base, "--script", retry, "--edit", "2", "second task, again"], home=home, cwd=wd)
    shows(live, home, sid, "a fork through the daemon")
    branches = json.loads(sd(["sessions", "branches", "--state-dir", home, sid, "--json"], home=home, cwd=wd).stdout)
    head = next(b for b in branches if b["current"])
    sd(["sessions", "name", "--state-dir", home, sid, "--branch", head["head_id"], "named"], home=home, cwd=wd)
    shows(live, home, sid, "a branch named from the CLI")
    compact_first_turn(home, sid)
    shows(live, home, sid, "a compaction written through the library")
    assert "named" in [b["name"] for b in live.current()[0]["branches"]]


def test_a_pull_reaches_the_document_through_the_daemon(followed):
    """Another machine's turns merged in by `sync pull` (another process) and by `session/pull`
    (the daemon itself, which announces a `reload` after)."""
    home, wd, sid, live, tmp = followed
    remote, other = tmp / "sessions.git", tmp / "other"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    other.mkdir()
    script = tmp / "elsewhere.json"
    script.write_text(json.dumps([{"text": "answered elsewhere", "repeat": True}]))
    sd(["sync", "push", remote, "--session", sid], home=home, cwd=wd)
    sd(["sync", "clone", remote, sid, "--here", wd], home=other, cwd=wd)

    def elsewhere(task):
        sd(["run", "--state-dir", other, "--session", sid, "--in-process", "--provider", "scripted", "--script",
            script, task], home=other, cwd=wd)
        sd(["sync", "push", remote, "--session", sid, "--state-dir", other], home=other, cwd=wd)
    elsewhere("a turn on the other machine")
    sd(["sync", "pull", remote, "--session", sid], home=home, cwd=wd)
    shows(live, home, sid, "a pull by the CLI")
    elsewhere("another turn on the other machine")

    async def pull():
        c = await connect(state_dir=str(home), auto_start=False)
        try:
            return await c.pull(sid, str(remote))
        finally:
            await c.aclose()
    assert anyio.run(pull)["status"] != "up_to_date"
    shows(live, home, sid, "a pull by the daemon")
