"""Property: whatever sequence of appends and commits runs, with an exception injected at any step
of any commit, the session afterwards (faults gone, one more commit) holds every acknowledged
node, `git fsck --strict` accepts it, its commit count equals its turn counter, and a fresh
process-independent open sees the same graph."""

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondag import Call
from sessiondag.core.errors import StorageError
from sessiondag.store import SessionStore
from test_write_faults import STEPS, assert_fsck_clean, chain, reopen_check


OPS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("commit"), st.sampled_from([None, *sorted(STEPS)]), st.just(False)),
), min_size=1, max_size=12)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_any_fault_sequence_leaves_a_complete_history(ops):
    tmp = tempfile.mkdtemp(prefix="faultprop-")
    mp = pytest.MonkeyPatch()
    try:
        mp.setenv("SESSIONDAG_JOURNAL_ROTATE_BYTES", "3000")
        state = os.path.join(tmp, "state")
        store = SessionStore(state)
        s = store.session(store.start_session("p", working_dir=None).id)
        acked = []
        for kind, arg, big in ops:
            if kind == "append":
                acked += chain(s, arg, size=40)
                if big:  # a spilled body: a loose object the commit's tree must reach
                    acked.append(s.append(Call("user", "b", output="z" * 40_000, predecessor=s.head_id)).id)
                continue
            if arg is None:
                s.commit_turn()
                continue
            with mp.context() as m:
                STEPS[arg][0](m)
                try:
                    s.commit_turn()
                except (StorageError, RuntimeError, MemoryError):
                    pass
        s.commit_turn()
        assert not s.open_turn
        if s.turn:
            assert assert_fsck_clean(s.path) == s.turn
        nodes = {i: c.to_dict() for i, c in s.graph.nodes.items()}
        store.close()
        reopen_check(state, "p", acked)
        again = SessionStore(state)
        try:
            assert {i: c.to_dict() for i, c in again.session("p").graph.nodes.items()} == nodes
        finally:
            again.close()
    finally:
        mp.undo()
        shutil.rmtree(tmp, ignore_errors=True)
