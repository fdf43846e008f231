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



def _foreign_schema(path):
    info_path = os.path.join(path, "session.json")
    info = open(info_path, "rb").read()
    assert b'"schema_version": 1' in info
    with open(info_path, "wb") as f:
        f.write(info.replace(b'"schema_version": 1', b'"schema_version": 99'))


def test_foreign_schema_thread_starts_over_after_earlier_scopes_in_this_process(workdir):
    """Earlier scopes of this process ran the role, each with the store it made itself (store=None:
    nothing the caller could close); the thread's schema is then foreign. Starting over must not be
    refused as busy naming this very process (issue 19, item 14)."""
    earlier = [session_scope("t5", working_dir=workdir, runtime=rt()) for _ in range(2)]  # kept alive
    for scope, text in zip(earlier, ("plan", "plan more")):
        assert scope.run("planner", text)[1].named
    third = session_scope("t5", working_dir=workdir, runtime=rt())
    _foreign_schema(third.store.path_of("t5-planner"))
    r, t = third.run("planner", "again")
    assert t.named and t.session_id == "t5-planner" and r.stop_reason == "end_turn"
    assert [c.output for c in third.store.session("t5-planner").get_branch() if c.role == "user"] == ["again"]
