"""Restore and diff of workspace checkpoints: real files, real session repositories, a real SIGKILL."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from sessiondag.core.checkpoint import UNDO_KEY
from sessiondag.core.errors import InvalidNodeError, NoCheckpointError, WorkspaceDirtyError
from sessiondag.core.model import ROOT
from sessiondag.runtime import checkpoints as ck
from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.store import SessionStore
from sessiondag.workspace.checkpointer import install

pytestmark = pytest.mark.process   # child processes (tests/tiers.py)


def turn(store, workdir, sid, calls):
    script = [{"tool_calls": [{"name": "run_command", "arguments": {"command": c}} for c in calls]}, {"text": "ok"}]
    rt = Runtime(ScriptedProvider(script), permissions=allow_policy({"write", "run"}))
    return run_task("t", session_id=sid, working_dir=workdir, store=store, runtime=rt)


def tree(root):
    out = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x != ".git"]
        for n in names + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            out[rel] = ("link", os.readlink(p)) if os.path.islink(p) else (oct(st.st_mode & 0o777), open(p, "rb").read())
    return out


def test_restore_to_an_earlier_turn_and_back(store, workdir):
    (workdir / ".gitignore").write_text("*.log\n")
    (workdir / "start.txt").write_text("0\n")
    r1 = turn(store, workdir, None, ["printf 'one\\n' > a.txt", "mkdir -p d && echo x > d/x.sh && chmod +x d/x.sh",
                                       "ln -s a.txt link"])
    sid = r1.session_id
    s = store.session(sid)
    at1 = tree(workdir)
    r2 = turn(store, workdir, sid, ["printf 'two\\n' > a.txt", "rm -r d", "echo new > new.txt", "rm link",
                                     "mkdir link && echo in > link/f", "chmod -x start.txt"])
    at2 = tree(workdir)
    (workdir / "keep.log").write_text("ignored, never touched\n")
    plan = ck.restore(s, r1.user_node_id, dry_run=True)
    assert {c["path"] for c in plan["files"]["changes"]} >= {"a.txt", "d/x.sh", "new.txt", "link", "link/f"}
    assert tree(workdir)["a.txt"] == at2["a.txt"]                      # a dry run changes nothing
    ck.restore(s, r1.user_node_id)
    now = tree(workdir)
    assert now.pop("keep.log") and now == at1                          # modes, links, deletions, new files
    ck.restore(s, None, undo=True)                                      # undo the restore: back at turn 2
    now = tree(workdir)
    assert now.pop("keep.log") and now == at2
    # ROOT: before the first turn
    ck.restore(s, ROOT)
    now = tree(workdir)
    assert now.pop("keep.log") and now == {".gitignore": at1[".gitignore"], "start.txt": at1["start.txt"]}
    assert len(s.graph.extra[UNDO_KEY]) == 3


def test_a_restore_names_its_node_unless_it_undoes(store, workdir):
    """No node_id and no undo: a typed refusal (it was an AssertionError: an internal error over
    RPC, found by tests/e2e/test_fuzz.py), and nothing changes."""
    (workdir / "a.txt").write_text("a\n")
    sid = turn(store, workdir, None, ["echo b > b.txt"]).session_id
    s = store.session(sid)
    head = s.head_id
    for what in ("files", "both"):
        with pytest.raises(InvalidNodeError):
            ck.restore(s, None, what=what)
    assert s.head_id == head and (workdir / "b.txt").read_text() == "b\n" and not s.graph.extra.get(UNDO_KEY)


def test_restore_refuses_a_dirty_tree_unless_forced(store, workdir):
    r1 = turn(store, workdir, None, ["echo a > a.txt"])
    s = store.session(r1.session_id)
    turn(store, workdir, r1.session_id, ["echo b > a.txt"])
    (workdir / "mine.txt").write_text("the user's own edit\n")
    with pytest.raises(WorkspaceDirtyError) as e:
        ck.restore(s, r1.user_node_id)
    assert e.value.paths == ["mine.txt"] and (workdir / "a.txt").read_text() == "b\n"
    out = ck.restore(s, r1.user_node_id, force=True)
    assert (workdir / "a.txt").read_text() == "a\n" and not (workdir / "mine.txt").exists()
    ck.restore(s, None, undo=True)                                      # the undo point kept the edit
    assert (workdir / "mine.txt").read_text() == "the user's own edit\n" and out["files"]["undo"]["id"]


def test_restore_across_branches_and_conversation(store, workdir):
    r1 = turn(store, workdir, None, ["echo base > f.txt"])
    sid = r1.session_id
    s = store.session(sid)
    ra = turn(store, workdir, sid, ["echo A > f.txt"])
    out = ck.restore(s, r1.head_id, what="both")
    assert (workdir / "f.txt").read_text() == "base\n" and out["head_id"] == r1.head_id == s.head_id
    rb = turn(store, workdir, sid, ["echo B > f.txt"])                 # forks from turn 1
    assert s.get_node(rb.user_node_id).predecessor == r1.head_id
    ck.restore(s, ra.head_id)                                           # the other branch's files
    assert (workdir / "f.txt").read_text() == "A\n"
    d = ck.diff(s, ra.head_id, rb.head_id)
    (f,) = d["files"]
    assert f["path"] == "f.txt" and "-A\n" in f["diff"] and "+B\n" in f["diff"]
    assert rb.user_node_id in d["nodes"]["only_in_to"] and ra.user_node_id in d["nodes"]["only_in_from"]
    d = ck.diff(s, None, ra.user_node_id)                               # from: the turn before
    assert d["from"] == r1.head_id and d["files"][0]["path"] == "f.txt"


def test_diff_reports_binary_files_and_limits(store_with, workdir):
    store = store_with({"SESSIONDAG_MAX_FILE_BYTES": 1000})
    r1 = turn(store, workdir, None, ["printf 'a\\0b' > bin", "head -c 5000 /dev/zero | tr '\\0' x > big"])
    s = store.session(r1.session_id)
    r2 = turn(store, workdir, r1.session_id, ["printf 'a\\0c' > bin", "echo y >> big"])
    by = {f["path"]: f for f in ck.diff(s, r1.user_node_id, r2.user_node_id)["files"]}
    assert by["bin"]["binary"] and "diff" not in by["bin"]
    assert by["big"]["not_stored"]
    assert s.get_node(r1.user_node_id).metadata["checkpoint"]["over_limit"] == 1
    ck.restore(s, r1.user_node_id)
    assert (workdir / "bin").read_bytes() == b"a\0b"
    assert (workdir / "big").read_bytes().endswith(b"y\n")              # not stored: left as it is


def test_no_checkpoint_for_an_unknown_session_state(store, workdir):
    r1 = turn(store, workdir, None, ["echo a > a.txt"])
    s = store.session(r1.session_id)
    s.set_meta("checkpoints.baseline", None)
    with pytest.raises(NoCheckpointError):
        ck.restore(s, ROOT)


KILLER = textwrap.dedent("""
    import os, sys, signal
    from sessiondag.store import SessionStore
    from sessiondag.workspace import restore as files
    from sessiondag.workspace.checkpointer import install
    from sessiondag.runtime import checkpoints as ck
    real = files.apply
    def dying(root, plan, read_blob, resolver="auto"):
        n = 0
        orig = plan.write
        for c in orig:
            plan.write = [c]
            real(root, plan, read_blob, resolver)
            n += 1
            if n == int(sys.argv[3]):
                os.kill(os.getpid(), signal.SIGKILL)
        return []
    files.apply = dying
    st = SessionStore(sys.argv[1]); install(st)
    ck.restore(st.session(sys.argv[2]), sys.argv[4])
""")


def test_sigkill_in_the_middle_of_a_restore(store, workdir, state_dir):
    cmds = [f"seq {i} 2000 > f{i:02d}.txt" for i in range(20)]
    r1 = turn(store, workdir, None, cmds)
    sid = r1.session_id
    old = tree(workdir)
    turn(store, workdir, sid, [f"echo changed {i} > f{i:02d}.txt" for i in range(20)])
    new = tree(workdir)
    store.close()
    p = subprocess.run([sys.executable, "-c", KILLER, str(state_dir), sid, "7", r1.user_node_id],
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)), capture_output=True)
    assert p.returncode == -signal.SIGKILL, p.stderr
    now = tree(workdir)
    assert set(now) == set(old)
    assert all(now[k] in (old[k], new[k]) for k in now)                 # each file old or new
    assert sum(now[k] == old[k] for k in now) == 7
    st = SessionStore(state_dir)
    install(st)
    s = st.session(sid)
    (undo,) = s.graph.extra[UNDO_KEY]                                   # the undo point was committed
    ck.restore(s, None, undo=True, force=True)
    assert tree(workdir) == new
    st.close()


def test_fork_with_restore_files_then_the_agent_sees_the_restored_files(store, workdir):
    r1 = turn(store, workdir, None, ["echo first > f.txt"])
    sid = r1.session_id
    turn(store, workdir, sid, ["echo second > f.txt", "echo extra > g.txt"])
    rt = Runtime(ScriptedProvider([{"tool_calls": [{"name": "read_file", "arguments": {"path": "f.txt"}}]},
                                   {"text": "ok"}]), permissions=allow_policy({"write", "run"}))
    r3 = run_task("again", session_id=sid, working_dir=workdir, store=store, runtime=rt,
                  branch_from=r1.head_id, restore_files=True)
    s = store.session(sid)
    assert s.get_node(r3.user_node_id).predecessor == r1.head_id          # a fork
    (read,) = [s.get_node(i) for i in r3.node_ids if s.get_node(i).name == "read_file"]
    assert "first" in read.output and not (workdir / "g.txt").exists()
    (workdir / "f.txt").write_text("dirty\n")
    with pytest.raises(WorkspaceDirtyError):
        run_task("once more", session_id=sid, working_dir=workdir, store=store, runtime=rt,
                 branch_from=r1.head_id, restore_files=True)


def test_a_partial_snapshot_never_deletes_what_it_did_not_look_at(store, workdir, store_with):
    for i in range(30):
        (workdir / f"d{i}").mkdir()
        (workdir / f"d{i}" / "f.txt").write_text(str(i))
    hurried = store_with({"SESSIONDAG_SNAPSHOT_BUDGET_S": "0.000001"})   # the first snapshot stops at once
    r1 = turn(hurried, workdir, None, ["true"])
    s = store.session(r1.session_id)
    assert s.graph.extra["checkpoints.baseline"]["partial"] == "budget"
    turn(store, workdir, r1.session_id, ["echo new > new.txt"])   # the store built with the default
    before = tree(workdir)
    out = ck.restore(s, ROOT)                                       # to the partial baseline
    after = tree(workdir)
    assert after == before                                          # nothing it did not examine is deleted
    assert {c["change"] for c in out["files"]["changes"]} == {"skipped"}
