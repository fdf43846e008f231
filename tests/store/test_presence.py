"""Who holds a session open, seen from one process: a store's close() lets go of everything, and
another store of this same process is not "another process" to a reset (issue 19, item 14)."""

import os

import pytest

from sessiondag.core.errors import SessionDeletedError
from sessiondag.core.model import Call
from sessiondag.store import SessionStore
from sessiondag.store.presence import holders


def _open_lock(store, sid):
    return os.path.join(store.path_of(sid), "open.lock")


def test_close_releases_every_descriptor_and_lock(state_dir, workdir):
    before = set(os.listdir("/proc/self/fd"))
    store = SessionStore(state_dir)
    h = store.open_session("p1", working_dir=workdir)
    s = store.session(h.id)
    s.append(Call("user", "u", output="x", predecessor="ROOT"))
    s.commit_turn()
    assert holders(_open_lock(store, "p1")) == [os.getpid()]
    store.close()
    assert holders(_open_lock(store, "p1")) == []
    left = [os.readlink(f"/proc/self/fd/{fd}") for fd in set(os.listdir("/proc/self/fd")) - before
            if os.path.exists(f"/proc/self/fd/{fd}")]
    assert not [p for p in left if str(state_dir) in p]


def test_a_reset_is_not_refused_by_another_store_of_this_process(state_dir, workdir):
    a = SessionStore(state_dir)
    h = a.open_session("p2", working_dir=workdir)
    held = a.session(h.id)
    held.append(Call("user", "u", output="x", predecessor="ROOT"))
    b = SessionStore(state_dir)
    assert b.reset_session("p2") is True
    assert not os.path.exists(a.path_of("p2"))
    assert a.loaded_session("p2") is None           # the other store let go of it and was told
    with pytest.raises(SessionDeletedError):
        held.append(Call("user", "u2", output="y", predecessor="ROOT"))
    a.close()
    b.close()


def test_a_mark_collected_while_the_registry_is_in_use_does_not_deadlock(state_dir, workdir):
    """A mark dropped without close() is closed by the garbage collector, which may run inside any
    allocation, the registry's own included: its __del__ must not wait for the registry's lock."""
    import gc
    import threading

    from sessiondag.store import presence

    store = SessionStore(state_dir)
    path = store.path_of(store.open_session("p3", working_dir=workdir).id)
    store.close()
    mark = presence.OpenMark(path, "p3")
    mark.cycle = mark  # only the cycle collector frees it
    del mark

    def collect_inside():
        with presence._HERE_MUTEX:
            gc.collect()
    t = threading.Thread(target=collect_inside, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "the collector's __del__ waited on the registry lock"
    assert holders(os.path.join(path, "open.lock")) == []


def test_a_store_dropped_without_close_lets_go_at_once(state_dir, workdir):
    """A temporary `SessionStore(dir).session(sid)` (as scripts and tests write) holds the session
    only while referenced: the mark's reset hook must not tie a cycle that waits for the cyclic GC
    (another process's `sessions delete` was refused as busy meanwhile)."""
    import gc
    store = SessionStore(state_dir)
    store.open_session("p4", working_dir=workdir)
    path = _open_lock(store, "p4")
    gc.disable()
    try:
        assert len(SessionStore(state_dir).session("p4").graph.nodes) >= 1
        store.close()
        assert holders(path) == []
    finally:
        gc.enable()
