"""Workspace snapshots at turn commits: real files, a real session repository, real git."""

import os
import subprocess

import pytest


from sessiondag.core.checkpoint import BASELINE_KEY, NODE_KEY
from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.store import checkpoints


def rt(script, allow=("write", "run")):
    return Runtime(ScriptedProvider(script), permissions=allow_policy(set(allow)))


def files_of(s, node_id):
    ck = s.get_node(node_id).metadata[NODE_KEY]
    entries, info = checkpoints.read(s.git, ck["id"])
    return {p.decode(): e for p, e in entries.items()}, info


@pytest.mark.process
def test_turns_record_what_tools_and_commands_and_others_wrote(store, workdir):
    (workdir / "keep.txt").write_text("before\n")
    (workdir / ".gitignore").write_text("*.log\n")
    (workdir / "noise.log").write_text("ignored\n")
    script = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "A\n"}},
                              {"name": "run_command", "arguments": {"command": "echo B > b.txt; chmod +x b.txt"}}]},
              {"text": "done"}]
    r = run_task("go", working_dir=workdir, store=store, runtime=rt(script))
    s = store.session(r.session_id)
    base = s.graph.extra[BASELINE_KEY]
    entries, _ = checkpoints.read(s.git, base["id"])
    assert sorted(entries) == [b".gitignore", b"keep.txt"]       # before the first turn: ignored left out
    after, info = files_of(s, r.user_node_id)
    assert sorted(after) == [".gitignore", "a.txt", "b.txt", "keep.txt"]
    assert after["b.txt"].mode == 0o100755 and after["a.txt"].mode == 0o100644
    assert s.git.get_blob(after["a.txt"].sha) == b"A\n" and info["partial"] is None
    (w,) = [c for c in s.graph.nodes.values() if c.name == "write_file"]   # the tool's own record
    (rec,) = w.metadata["workspace_files"]
    assert rec["path"] == "a.txt" and rec["before_blob"] is None and s.git.get_blob(rec["after_blob"]) == b"A\n"
    # another process changes a file between turns; the next turn (it writes nothing) records it
    (workdir / "keep.txt").write_text("edited by someone else\n")
    os.symlink("keep.txt", workdir / "link")
    r2 = run_task("again", session_id=r.session_id, working_dir=workdir, store=store,
                  runtime=rt([{"text": "nothing to do"}]))
    after2, _ = files_of(s, r2.user_node_id)
    assert s.get_node(r.user_node_id).metadata[NODE_KEY]["changed"] == 2      # a.txt, b.txt since the baseline
    assert s.get_node(r2.user_node_id).metadata[NODE_KEY]["changed"] == 2     # keep.txt, link
    assert s.git.get_blob(after2["keep.txt"].sha) == b"edited by someone else\n"
    assert after2["link"].mode == 0o120000 and s.git.get_blob(after2["link"].sha) == b"keep.txt"
    # the commit names the checkpoint too; git accepts the repository
    head = s.git.head()
    assert s.git.workspace(head) == s.get_node(r2.user_node_id).metadata[NODE_KEY]["id"]
    subprocess.run(["git", "--git-dir", os.path.join(s.path, "git"), "fsck", "--strict"], check=True,
                   capture_output=True)


def test_error_turn_is_snapshotted(store, workdir):
    script = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
              {"error": "boom"}]
    r = run_task("go", working_dir=workdir, store=store, runtime=rt(script))
    assert r.stop_reason == "error"
    after, _ = files_of(store.session(r.session_id), r.user_node_id)
    assert "x.txt" in after


@pytest.mark.process
def test_user_repository_untouched(store, workdir):
    def git(*a):
        return subprocess.run(["git", "-C", str(workdir), *a], check=True, capture_output=True).stdout
    git("init", "-q")
    git("config", "user.email", "t@t"); git("config", "user.name", "t")
    (workdir / "t.txt").write_text("tracked\n")
    git("add", "t.txt"); git("commit", "-qm", "one")
    (workdir / "t.txt").write_text("changed\n")
    (workdir / "s.txt").write_text("stash me\n")
    git("stash", "push", "-q", "--include-untracked")
    (workdir / "u.txt").write_text("untracked\n")
    (workdir / "t.txt").write_text("modified\n")
    idx = (workdir / ".git" / "index").read_bytes()
    before = [git("status", "--porcelain"), git("stash", "list"), git("for-each-ref"), idx]
    script = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "n.txt", "content": "n"}}]}, {"text": "ok"}]
    r = run_task("go", working_dir=workdir, store=store, runtime=rt(script))
    after, _ = files_of(store.session(r.session_id), r.user_node_id)
    assert ".git" not in {p.split("/")[0] for p in after} and "u.txt" in after
    (workdir / "n.txt").unlink()
    assert [git("status", "--porcelain"), git("stash", "list"), git("for-each-ref"),
            (workdir / ".git" / "index").read_bytes()] == before
