import os

import pytest

from sessiondag.core.errors import InvalidSessionIdError
from sessiondag.runtime import Runtime, run_turn, session_scope
from sessiondag.runtime.providers.scripted import ScriptedProvider


def rt():
    return Runtime(ScriptedProvider())


def test_role_threads_resume_per_role_and_never_share(store, workdir):
    scope = session_scope("task-7f2", working_dir=workdir, store=store, runtime=rt())
    assert scope.session_id_for("planner") == "task-7f2-planner"
    r1, t1 = scope.run("planner", "plan it")
    r2, t2 = scope.run("generator", "build it")
    r3, t3 = scope.run("planner", "re-plan")       # another head bound to the planner role
    assert t1.session_id == t3.session_id == "task-7f2-planner" and t2.session_id == "task-7f2-generator"
    assert t1.named and t2.named and t3.named
    planner = store.session("task-7f2-planner")
    assert [c.output for c in planner.get_branch() if c.role == "user"] == ["plan it", "re-plan"]
    assert [c.output for c in store.session("task-7f2-generator").get_branch() if c.role == "user"] == ["build it"]
    # a later run (new scope object, same key) continues the same threads
    again = session_scope("task-7f2", working_dir=workdir, store=store, runtime=rt())
    with again.thread("planner") as t:
        assert t.session_id == "task-7f2-planner"
        run_turn("third")
    assert len([c for c in planner.get_branch() if c.role == "user"]) == 3


def test_invalid_scope_or_role_is_refused(store, workdir):
    with pytest.raises(InvalidSessionIdError):
        session_scope("task:1", working_dir=workdir, store=store)
    with pytest.raises(InvalidSessionIdError):
        session_scope("task", working_dir=workdir, store=store).session_id_for("plan/ner")


def test_thread_owned_by_another_working_dir_runs_unnamed_and_is_left_untouched(store, workdir, tmp_path):
    other = tmp_path / "other-wd"
    other.mkdir()
    session_scope("t9", working_dir=other, store=store, runtime=rt()).run("planner", "elsewhere")
    path = store.path_of("t9-planner")
    journal = open(os.path.join(path, "journal.log"), "rb").read()
    r, t = session_scope("t9", working_dir=workdir, store=store, runtime=rt()).run("planner", "here")
    assert not t.named and t.session_id != "t9-planner" and r.stop_reason == "end_turn"
    assert open(os.path.join(path, "journal.log"), "rb").read() == journal
    assert store.resume_session("t9-planner", working_dir=other).head_id  # still resumable from its own dir


def test_corrupt_thread_starts_over_under_the_same_name(store, workdir):
    scope = session_scope("t3", working_dir=workdir, store=store, runtime=rt())
    scope.run("evaluator", "judge")
    store.close()
    with open(os.path.join(store.path_of("t3-evaluator"), "session.json"), "wb") as f:
        f.write(b"{torn")
    r, t = scope.run("evaluator", "judge again")
    assert t.named and t.session_id == "t3-evaluator"
    assert [c.output for c in store.session("t3-evaluator").get_branch() if c.role == "user"] == ["judge again"]
