import os
import re
import threading

import pytest

import sessiondag
from sessiondag.core.errors import SessionResumeError
from sessiondag.runtime import context as C
from sessiondag.runtime import session_context
from sessiondag.runtime.runtime import Runtime
from sessiondag.runtime.providers.scripted import ScriptedProvider


def _vars():
    return tuple(v.get() for v in C.CONTEXT_VARS)


def test_no_id_creates_a_new_session_and_exposes_it(store, workdir):
    with session_context(working_dir=workdir, store=store) as h:
        assert h.session_id and h.created and store.exists(h.session_id)
        assert C.current_writer().session_id == h.session_id
        assert isinstance(C.current_runtime(), Runtime)
    with session_context(working_dir=workdir, store=store) as h2:
        assert h2.session_id != h.session_id


def test_id_passed_is_reused_or_created_under_it(store, workdir):
    with session_context("task-42", working_dir=workdir, store=store) as h:
        assert h.session_id == "task-42" and h.created
    with session_context("task-42", working_dir=workdir, store=store) as h:
        assert h.session_id == "task-42" and not h.created
    with session_context("task-42", store=store) as h:  # no working dir given: the recorded one
        assert h.working_dir == os.path.realpath(workdir)


def test_resume_into_another_working_dir_is_refused_and_sets_nothing(store, workdir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    with session_context("s1", working_dir=workdir, store=store):
        pass
    before = _vars()
    with pytest.raises(SessionResumeError) as ei:
        with session_context("s1", working_dir=other, store=store):
            pass
    assert ei.value.reason == "working_dir_mismatch"
    assert _vars() == before


def test_vars_reset_in_reverse_on_exception_and_nesting(store, workdir):
    before = _vars()
    with pytest.raises(ZeroDivisionError):
        with session_context(working_dir=workdir, store=store) as outer:
            with session_context(working_dir=workdir, store=store) as inner:
                assert C.current_writer().session_id == inner.session_id
                1 / 0
    assert _vars() == before
    with session_context(working_dir=workdir, store=store) as outer:
        with session_context(working_dir=workdir, store=store):
            pass
        assert C.current_writer().session_id == outer.session_id
    assert _vars() == before


def test_exiting_never_deletes_the_session(store, workdir):
    with session_context(working_dir=workdir, store=store) as h:
        sid = h.session_id
    assert sid in [s["session_id"] for s in store.list_sessions()]
    assert store.session(sid).head_id == "ROOT"


def test_runtime_reuse_and_no_runtime(store, workdir):
    rt = Runtime(ScriptedProvider())
    with session_context(working_dir=workdir, store=store, runtime=rt) as h:
        assert h.runtime is rt and C.current_runtime() is rt
    with session_context(working_dir=workdir, store=store, create_runtime_if_none=False) as h:
        assert h.runtime is None and C.current_runtime() is None and C.current_writer() is not None


def test_threads_do_not_see_each_others_context(store, workdir):
    seen = {}

    def worker(name):
        with session_context(working_dir=workdir, store=store) as h:
            seen[name] = (h.session_id, C.current_writer().session_id)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert all(a == b for a, b in seen.values()) and len({a for a, _ in seen.values()}) == 4
    assert C.current_writer() is None


def test_only_context_py_sets_the_session_vars():
    """No other code in the package sets the per-turn ContextVars."""
    names = [v.name for v in C.CONTEXT_VARS]
    py_names = ["_store", "_current_turn_id", "_current_runtime", "_call_id", "_frames", "_turn"]
    root = os.path.dirname(sessiondag.__file__)
    offenders = []
    for dirpath, _, files in os.walk(root):
        for fn in files:
            if not fn.endswith(".py"):
                continue
            path = os.path.join(dirpath, fn)
            if path == C.__file__:
                continue
            text = open(path, encoding="utf-8").read()
            for n in py_names:
                if re.search(rf"\b{n}\.(set|reset)\(", text):
                    offenders.append((path, n))
            for n in names:
                if f'"{n}"' in text or f"'{n}'" in text:
                    offenders.append((path, n))
            if re.search(r"\bCONTEXT_VARS\b", text):
                offenders.append((path, "CONTEXT_VARS"))
    assert offenders == []
    # and the vars really are the ones context.py defines and sets
    src = open(C.__file__, encoding="utf-8").read()
    for n in py_names:
        assert re.search(rf"\b{n}\.set\(", src), n
