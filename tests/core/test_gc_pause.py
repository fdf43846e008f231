"""The GC pause (core/gc_pause.py): reference-counted across threads, the caller's collector state
restored exactly — also through the store's open and the render memo, which both use it."""

from __future__ import annotations

import gc
import queue
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondag import Call, ROOT
from sessiondag.context import prefix
from sessiondag.context.messages import render_messages
from sessiondag.core.gc_pause import gc_paused, pausers
from sessiondag.store import SessionStore


@pytest.fixture
def gc_state():
    """Whatever a test does to the collector, the next test starts with it on."""
    was = gc.isenabled()
    yield
    assert pausers() == 0
    (gc.enable if was else gc.disable)()


class Worker:
    """A real thread that enters and leaves pauses when told, one step at a time."""

    def __init__(self):
        self.todo: queue.Queue = queue.Queue()
        self.done: queue.Queue = queue.Queue()
        self.stack: list = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            op = self.todo.get()
            if op is None:
                return
            try:
                if op == "enter":
                    cm = gc_paused()
                    cm.__enter__()
                    self.stack.append(cm)
                else:
                    self.stack.pop().__exit__(None, None, None)
                self.done.put(None)
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                self.done.put(e)

    def do(self, op: str) -> None:
        self.todo.put(op)
        err = self.done.get(timeout=30)
        if err is not None:
            raise err

    def stop(self):
        while self.stack:
            self.do("leave")
        self.todo.put(None)
        self.thread.join(timeout=30)


def test_a_pause_outlives_the_thread_that_started_it(gc_state):
    """Thread A pauses, B pauses, A leaves: the collector stays off until B leaves too (a
    per-call `was_enabled` would turn it back on under B)."""
    gc.enable()
    a, b = Worker(), Worker()
    try:
        a.do("enter")
        b.do("enter")
        assert not gc.isenabled()
        a.do("leave")
        assert not gc.isenabled() and pausers() == 1
        b.do("leave")
        assert gc.isenabled() and pausers() == 0
    finally:
        a.stop(), b.stop()


def test_a_caller_with_the_collector_off_finds_it_off(gc_state):
    gc.disable()
    a, b = Worker(), Worker()
    try:
        a.do("enter")
        b.do("enter")
        a.do("leave")
        b.do("leave")
        assert not gc.isenabled()
    finally:
        a.stop(), b.stop()


def test_turning_the_collector_on_during_a_pause_is_kept(gc_state):
    """Someone who turns the collector on while a pause is held (it was off before) keeps it on."""
    gc.disable()
    with gc_paused():
        gc.enable()
    assert gc.isenabled()


def test_nested_and_conditional_pauses(gc_state):
    gc.enable()
    with gc_paused(False):
        assert gc.isenabled()
    with gc_paused():
        with gc_paused():
            assert pausers() == 2
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_exception_inside_still_leaves(gc_state):
    gc.enable()
    with pytest.raises(ZeroDivisionError):
        with gc_paused():
            1 / 0
    assert gc.isenabled() and pausers() == 0


@settings(max_examples=40, deadline=None)
@given(initially_on=st.booleans(), steps=st.lists(st.tuples(st.integers(0, 2), st.booleans()), max_size=30))
def test_any_interleaving_of_three_threads(initially_on, steps):
    """Invariant after every step: the collector is off while any pause is held, and back in the
    caller's state when none is."""
    was = gc.isenabled()
    (gc.enable if initially_on else gc.disable)()
    workers = [Worker() for _ in range(3)]
    try:
        for i, enter in steps:
            w = workers[i]
            if enter:
                w.do("enter")
            elif w.stack:
                w.do("leave")
            held = sum(len(x.stack) for x in workers)
            assert pausers() == held
            assert gc.isenabled() == (initially_on and held == 0)
        for w in workers:
            w.stop()
        assert gc.isenabled() == initially_on
    finally:
        for w in workers:
            w.stop()
        (gc.enable if was else gc.disable)()


def test_store_open_and_memo_build_in_threads_restore_the_callers_state(tmp_path, gc_state):
    """A library caller that runs with the collector off: opening sessions and building large
    render memos from several threads at once leaves it off; with it on, leaves it on."""
    state = str(tmp_path / "state")
    store = SessionStore(state)
    sids = []
    for _ in range(3):
        s = store.session(store.open_session(None, working_dir=str(tmp_path)).id)
        prev, calls = ROOT, []
        for k in range(prefix.BULK + 10):
            calls.append(Call("user", "u", output=f"m{k}", predecessor=prev))
            prev = calls[-1].id
        s.append_many(calls)
        s.commit_turn()
        sids.append(s.id)
    store.close()

    for initially_on in (False, True):
        (gc.enable if initially_on else gc.disable)()
        errors, sizes = [], []

        def work(sid):
            try:
                st2 = SessionStore(state)
                try:
                    sizes.append(len(render_messages(st2.session(sid))[0]))
                finally:
                    st2.close()
            except BaseException as e:  # noqa: BLE001 - handed to the test thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(sid,)) for sid in sids]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert not errors, errors
        assert sizes == [prefix.BULK + 10] * 3
        assert pausers() == 0
        assert gc.isenabled() == initially_on


def _young_ids() -> set[int]:
    return {id(o) for g in (0, 1) for o in gc.get_objects(generation=g)}


@pytest.mark.parametrize("pause", ["daemon", "client"])
def test_what_a_pause_built_is_old_when_it_ends(gc_state, pause):
    """The objects allocated during a pause are in the oldest generation when the collector comes
    back on (the next young collections do not rescan them); a frozen set of objects stays frozen."""
    from sessiondag_client.wire.codec import gc_paused as client_paused
    paused = gc_paused if pause == "daemon" else client_paused
    gc.enable()
    with paused():
        built = [[i] for i in range(5000)]
    assert gc.isenabled() and not (_young_ids() & {id(x) for x in built})
    old = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(x) in old for x in built)

    gc.disable()  # a caller with the collector off: the objects are left where they are
    with paused():
        kept = [[i] for i in range(100)]
    assert all(id(x) in _young_ids() for x in kept) and not gc.isenabled()

    gc.enable()
    gc.freeze()  # someone keeps objects frozen on purpose (cli/view.py): a pause does not unfreeze them
    try:
        frozen = gc.get_freeze_count()
        with paused():
            more = [[i] for i in range(100)]
        assert gc.get_freeze_count() == frozen and more
    finally:
        gc.unfreeze()
