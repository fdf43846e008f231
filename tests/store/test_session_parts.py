"""A Session composes its parts (store/catch_up.py's CatchUp, store/events.py's Listeners): they own
their state and hold no strong reference back to the Session, so a released Session is freed by
reference counting alone, at once, and what is keyed on it weakly (the render caches, the usage
ledgers: context/per_session.py) goes with it, with the cyclic GC off (core/gc_pause.py turns it off
for bulk builds; a daemon counts the caches in daemon/status)."""

import gc
import weakref

from sessiondag import Call, ROOT
from sessiondag.context.cache import cache_count, cache_for
from sessiondag.store import SessionStore


def test_a_released_session_is_freed_without_the_cyclic_gc(tmp_path):
    store = SessionStore(tmp_path / "state")
    store.start_session("parts", working_dir=tmp_path)
    s = store.session("parts")
    u = s.append(Call("user", "u", output="hi", predecessor=ROOT))
    s.commit_turn()
    s.refresh()
    heard = []
    s.add_listener(lambda session, events: heard.append(len(events)))
    s.append(Call("llm", "m", output="hello", predecessor=u.id))
    assert heard == [1]
    before = cache_count()
    cache_for(s)
    assert cache_count() == before + 1
    gc.collect()
    gc.disable()
    try:
        ref = weakref.ref(s)
        assert store.release("parts", s)
        del s
        assert ref() is None, gc.get_referrers(ref()) if ref() is not None else None
        assert cache_count() == before
    finally:
        gc.enable()
        store.close()


def test_the_parts_own_their_state(tmp_path):
    store = SessionStore(tmp_path / "state")
    store.start_session("own", working_dir=tmp_path)
    s = store.session("own")
    u = s.append(Call("user", "u", output="hi", predecessor=ROOT))
    assert s.open_turn and s.turn_node_ids == (u.id,) and s.catch_up.dirty >= {u.id}
    s.commit_turn()
    assert not s.open_turn and s.turn == 1 and s.catch_up.turn_new == []
    assert s.loaded_graph is s.graph is s.catch_up.current
    assert not s.listeners
    fn = lambda session, events: None  # noqa: E731
    s.add_listener(fn)
    assert s.listeners and s.remove_listener(fn) and not s.remove_listener(fn)
    store.close()
