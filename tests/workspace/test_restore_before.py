"""Restore to "just before this tool call" (runtime/before_call.py) on real files and a real session
repository: the turn's starting snapshot with the recorded writes of the earlier tool calls on top,
the call's own before-blob last; what a command did before it is named, not guessed."""

import pytest

from sessiondag.core.errors import InvalidNodeError
from sessiondag.runtime import Runtime, allow_policy, run_task
from sessiondag.runtime import checkpoints as ck
from sessiondag.runtime.providers.scripted import ScriptedProvider


def call(name, **args):
    return {"tool_calls": [{"name": name, "arguments": args}]}


pytestmark = pytest.mark.process   # its turn's run_command starts a shell


@pytest.fixture
def session(store, workdir):
    (workdir / "keep.txt").write_text("kept\n")
    (workdir / "a.txt").write_text("start\n")
    r0 = run_task("zero", working_dir=workdir, store=store,
                  runtime=Runtime(ScriptedProvider([{"text": "ok"}])))
    script = [call("write_file", path="a.txt", content="one\n"),
              call("edit_file", path="./a.txt", old="one", new="two"),
              call("write_file", path="sub/b.txt", content="B\n"),
              call("run_command", command="echo c > c.txt && echo A > a.txt"),
              call("write_file", path="a.txt", content="three\n"),
              {"text": "done"}]
    r = run_task("go", session_id=r0.session_id, working_dir=workdir, store=store,
                 runtime=Runtime(ScriptedProvider(script), permissions=allow_policy({"write", "run"})))
    s = store.session(r.session_id)
    tools = [c for c in s.get_branch(r.head_id) if c.role == "code" and c.name in ("write_file", "edit_file",
                                                                                  "run_command")]
    assert [c.name for c in tools] == ["write_file", "edit_file", "write_file", "run_command", "write_file"]
    return s, tools


def tree(workdir):
    return {str(p.relative_to(workdir)): p.read_text() for p in sorted(workdir.rglob("*")) if p.is_file()}


def test_before_each_tool_call(session, workdir):
    s, (w1, edit, wb, cmd, w3) = session
    assert tree(workdir) == {"a.txt": "three\n", "c.txt": "c\n", "keep.txt": "kept\n", "sub/b.txt": "B\n"}
    out = ck.restore(s, edit.id, before=True)
    assert tree(workdir) == {"a.txt": "one\n", "keep.txt": "kept\n"}        # after w1, before the edit
    assert out["files"]["before"]["applied"] == [w1.id] and out["files"]["before"]["unknown"] == []
    ck.restore(s, cmd.id, before=True)
    assert tree(workdir) == {"a.txt": "two\n", "keep.txt": "kept\n", "sub/b.txt": "B\n"}
    # after the command: its effects are not recorded; the last write's own before-blob is exact
    out = ck.restore(s, w3.id, before=True)
    assert tree(workdir)["a.txt"] == "A\n" and out["files"]["before"]["unknown"] == [cmd.id]
    assert "c.txt" not in tree(workdir)       # what the command made is not known to exist there
    ck.restore(s, w1.id, before=True)
    assert tree(workdir) == {"a.txt": "start\n", "keep.txt": "kept\n"}      # the turn's start
    # each of these is a restore: undo goes back step by step, the end of the turn is reachable
    ck.restore(s, None, undo=True)
    assert tree(workdir)["a.txt"] == "A\n"
    ck.restore(s, w3.id)
    assert tree(workdir) == {"a.txt": "three\n", "c.txt": "c\n", "keep.txt": "kept\n", "sub/b.txt": "B\n"}


def test_before_a_dry_run_and_refusals(session, workdir):
    s, (w1, edit, *_rest) = session
    plan = ck.restore(s, edit.id, before=True, dry_run=True)
    assert {c["path"]: c["change"] for c in plan["files"]["changes"]} == {
        "a.txt": "write", "c.txt": "delete", "sub/b.txt": "delete"}
    assert (workdir / "a.txt").read_text() == "three\n"
    with pytest.raises(InvalidNodeError):
        ck.restore(s, None, before=True)
    with pytest.raises(InvalidNodeError):
        ck.restore(s, "no-such-node", before=True)
