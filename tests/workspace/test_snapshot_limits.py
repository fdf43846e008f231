"""Snapshot limits and ignore sources beyond `.gitignore`, and checkpoints that survive a `git clone`
of the session repository: real files, real git, real session repositories."""

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys

import pytest

from sessiondag.core.checkpoint import BASELINE_KEY, NODE_KEY
from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime import checkpoints as ck
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.store import SessionStore, checkpoints, repo_size
from sessiondag.workspace.checkpointer import install


def turn(store, workdir, sid, commands=()):
    script = [{"tool_calls": [{"name": "run_command", "arguments": {"command": c}} for c in commands]}] \
        if commands else []
    rt = Runtime(ScriptedProvider(script + [{"text": "ok"}]), permissions=allow_policy({"write", "run"}))
    return run_task("t", session_id=sid, working_dir=workdir, store=store, runtime=rt)


def snapshot_of(s, node_id=None):
    meta = s.get_node(node_id).metadata[NODE_KEY] if node_id else s.graph.extra[BASELINE_KEY]
    entries, info = checkpoints.read(s.git, meta["id"])
    return meta, {p.decode(): e for p, e in entries.items()}, info


@pytest.mark.process
def test_a_session_over_its_budget_warns_and_says_so(store, workdir, store_with, caplog):
    (workdir / "a.txt").write_text("a\n" * 100)
    r1 = turn(store, workdir, None)
    s = store.session(r1.session_id)
    assert "over_budget" not in s.get_node(r1.user_node_id).metadata[NODE_KEY]   # 2 GiB by default
    used = repo_size.repo_bytes(s.git.git_dir)
    tight = store_with({"SESSIONDAG_SESSION_BUDGET_BYTES": used // 2})
    with caplog.at_level(logging.WARNING, logger="sessiondag.store.checkpoints"):
        r2 = turn(tight, workdir, r1.session_id, ["echo more >> a.txt"])
    meta = s.get_node(r2.user_node_id).metadata[NODE_KEY]
    assert meta["over_budget"] > used // 2 and meta["id"]          # still snapshotted, flagged
    assert any("over its budget" in m and s.id in m for m in caplog.messages)
    never = store_with({"SESSIONDAG_SESSION_BUDGET_BYTES": 0})            # 0: never
    r3 = turn(never, workdir, r1.session_id, ["echo again >> a.txt"])
    assert "over_budget" not in s.get_node(r3.user_node_id).metadata[NODE_KEY]


def test_max_snapshot_bytes_stores_what_fits_and_the_rest_next_time(store_with, workdir):
    """New content past max_snapshot_bytes in one snapshot is hashed, not stored (`snapshot_limit`);
    the next snapshot stores what it can of it, so a run of turns catches up; a restore skips a file
    whose content was never stored."""
    store = store_with({"SESSIONDAG_MAX_SNAPSHOT_BYTES": 2500})
    for i in range(5):
        (workdir / f"f{i}.txt").write_bytes(bytes([65 + i]) * 1000)
    r1 = turn(store, workdir, None)
    s = store.session(r1.session_id)
    base, files, info = snapshot_of(s)
    stored = sorted(p for p, e in files.items() if e.stored)
    over = sorted(p for p, e in files.items() if not e.stored)
    assert len(stored) == 2 and len(over) == 3 and base["over_limit"] == 3
    assert all(row[4] == "snapshot_limit" for row in info["over_limit"])
    assert sorted(row[0] for row in info["over_limit"]) == over
    for p in stored:
        assert s.git.get_blob(files[p].sha) == (workdir / p).read_bytes()
    # the turn's own snapshot (nothing changed) stores two more, the next one the last
    meta1, files1, _ = snapshot_of(s, r1.user_node_id)
    assert meta1["over_limit"] == 1
    r2 = turn(store, workdir, r1.session_id)
    meta2, files2, _ = snapshot_of(s, r2.user_node_id)
    assert meta2["over_limit"] == 0 and all(e.stored for e in files2.values())
    # a restore to the baseline cannot bring back what it did not store: it says so, keeps the file
    (workdir / over[0]).write_text("changed\n")
    (workdir / stored[0]).write_text("changed too\n")
    r3 = turn(store, workdir, r1.session_id)
    out = ck.restore(s, "ROOT")
    skipped = {c["path"] for c in out["files"]["changes"] if c["change"] == "skipped"}
    assert over[0] in skipped and (workdir / over[0]).read_text() == "changed\n"
    assert (workdir / stored[0]).read_bytes() == s.git.get_blob(files[stored[0]].sha)   # back
    assert r3.user_node_id and not skipped - {over[0]}


def _git(cwd, *args, env=None):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


@pytest.mark.process
@pytest.mark.parametrize("global_source", ["core.excludesFile", "XDG_CONFIG_HOME"])
def test_info_exclude_and_the_global_excludes_are_respected(store, workdir, tmp_path, monkeypatch, global_source):
    home = tmp_path / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    if global_source == "core.excludesFile":
        (home / "my-excludes").write_text("*.swp\nbuild-out/\n")
        gitconfig.write_text(f"[core]\n\texcludesFile = {home / 'my-excludes'}\n")
    else:
        (home / "xdg" / "git").mkdir(parents=True)
        (home / "xdg" / "git" / "ignore").write_text("*.swp\nbuild-out/\n")
        gitconfig.write_text("")
    _git(workdir, "init", "-q")
    (workdir / ".git" / "info").mkdir(exist_ok=True)
    (workdir / ".git" / "info" / "exclude").write_text("local-only.txt\nscratch/\n")
    for p in ("src/main.py", "local-only.txt", "scratch/notes.md", "src/.main.py.swp", "build-out/x.o",
              "keep.txt"):
        (workdir / p).parent.mkdir(parents=True, exist_ok=True)
        (workdir / p).write_text(p + "\n")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=workdir,
                            capture_output=True, text=True, check=True).stdout
    git_sees = sorted(line[3:] for line in status.splitlines())
    r1 = turn(store, workdir, None)
    s = store.session(r1.session_id)
    _, files, _ = snapshot_of(s, r1.user_node_id)
    assert sorted(files) == git_sees == ["keep.txt", "src/main.py"]        # the same paths git tracks
    # a change to info/exclude changes the rules of the next snapshot (no stale stat cache)
    (workdir / ".git" / "info" / "exclude").write_text("scratch/\n")
    r2 = turn(store, workdir, r1.session_id)
    _, files2, _ = snapshot_of(s, r2.user_node_id)
    assert sorted(files2) == ["keep.txt", "local-only.txt", "src/main.py"]


@pytest.mark.process
def test_checkpoints_survive_a_clone_of_the_session_repository(tmp_path, workdir):
    """Only the session's git repository travels (`git clone --bare` into another state dir, the
    original gone): the rebuilt session still restores every turn's files byte for byte."""
    state = tmp_path / "state"
    st = SessionStore(state)
    install(st)
    r1 = turn(st, workdir, None, ["printf 'one\\n' > a.txt && mkdir -p d && printf 'x' > d/x && ln -s a.txt l"])
    sid = r1.session_id
    r2 = turn(st, workdir, sid, ["printf 'two\\n' > a.txt && rm -r d && chmod +x a.txt"])
    src = os.path.join(st.session(sid).path, "git")
    st.close()
    other = tmp_path / "other"
    dest = other / "sessions" / sid / "git"
    dest.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", src, str(dest)], check=True, capture_output=True)
    shutil.rmtree(state)
    st2 = SessionStore(other)
    install(st2)
    try:
        st2.resume_session(sid, working_dir=workdir)
        s = st2.session(sid)
        assert s.get_node(r1.user_node_id).metadata[NODE_KEY]["id"]
        ck.restore(s, r1.user_node_id, force=True)   # the stat cache did not travel: the tree is "dirty"
        assert (workdir / "a.txt").read_bytes() == b"one\n" and not os.access(workdir / "a.txt", os.X_OK)
        assert (workdir / "d" / "x").read_bytes() == b"x" and os.readlink(workdir / "l") == "a.txt"
        ck.restore(s, r2.user_node_id)
        assert (workdir / "a.txt").read_bytes() == b"two\n" and os.access(workdir / "a.txt", os.X_OK)
        assert not (workdir / "d").exists()
        ck.restore(s, None, undo=True)
        assert (workdir / "d" / "x").read_bytes() == b"x"
    finally:
        st2.close()


@pytest.mark.process   # a child process (tests/tiers.py)
def test_a_file_over_the_limit_is_hashed_without_being_held_in_memory(tmp_path):
    """A 768 MiB file (sparse: no disk) over `max_file_bytes` is recorded by its git blob id and size,
    hashed as it is read: the snapshotting process (a child; its peak RSS is VmHWM, not getrusage's
    maxrss, which keeps the forking parent's peak across exec: the whole suite's pytest) stays far
    below the file's size (it once held every chunk until the end), and the id is git's."""
    wd = tmp_path / "work"
    wd.mkdir()
    big = wd / "disk.img"
    with open(big, "wb") as f:
        f.truncate(768 << 20)
        f.seek(512 << 20)
        f.write(b"middle")
    code = (
        "import json, sys\n"
        "from sessiondag.workspace.snapshot import Snapshotter\n"
        "st = Snapshotter(sys.argv[1], None).take(lambda sha: False, lambda sha, data: None)\n"
        "e = st.entries[b'disk.img']\n"
        "hwm = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "print(json.dumps([e.sha, e.size, e.over, hwm]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(wd)], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    sha, size, over, maxrss_kib = json.loads(out.stdout)
    assert (size, over) == (768 << 20, "file_limit")
    assert maxrss_kib < 384 << 10, maxrss_kib          # KiB: under half the file's size
    h = hashlib.sha1(b"blob %d\0" % size)             # git's blob id, by its definition
    with open(big, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    assert sha == h.hexdigest()
