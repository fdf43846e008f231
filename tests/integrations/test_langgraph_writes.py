"""SessiondagSaver's write path: the session a thread writes to is remembered (no look-up on disk
per put), and one dropped under the saver starts again at the next write; a list channel is encoded
incrementally, exactly as a full encode would (values.py); the DAG's message previews are those of
the whole text."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from sessiondag.integrations.langgraph import SessiondagSaver
from sessiondag.integrations.langgraph.values import INLINE_MAX
from sessiondag.store import SessionStore


def put(saver, thread, parent, messages, step, version):
    cp = empty_checkpoint()
    cp.update(id=str(uuid6(clock_seq=step)), channel_values={"messages": messages},
              channel_versions={"messages": version})
    conf = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    if parent:
        conf["configurable"]["checkpoint_id"] = parent
    return saver.put(conf, cp, {"source": "loop", "step": step, "parents": {}},
                     {"messages": version})["configurable"]["checkpoint_id"]


def latest(saver, thread):
    got = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    return None if got is None else got.checkpoint["channel_values"]["messages"]


@pytest.mark.parametrize("size", ["inline", "blob"])
@pytest.mark.parametrize("how", ["reset by its store", "removed by another process"])
def test_a_thread_dropped_under_the_saver_starts_again_at_the_next_put(tmp_path, how, size):
    store = SessionStore(tmp_path / "state")
    saver = SessiondagSaver(store, commit_every=0)
    body = "x" * (10 if size == "inline" else 2 * INLINE_MAX)
    v1 = saver.get_next_version(None, None)
    first = put(saver, "t", None, [body + "1"], 1, v1)
    s = saver.session_for("t")
    assert s is not None and latest(saver, "t") == [body + "1"]
    if how == "reset by its store":
        assert store.reset_session(s.id)
    else:  # `rm -rf` of the session directory, as a user (or another tool) would
        subprocess.run(["rm", "-rf", s.path], check=True)
    assert latest(saver, "t") is None
    v2 = saver.get_next_version(v1, None)
    put(saver, "t", first, [body + "1", body + "2"], 2, v2)  # its parent is gone with the session
    assert latest(saver, "t") == [body + "1", body + "2"]
    saver.close()
    reopened = SessiondagSaver(SessionStore(tmp_path / "state"))  # on disk, not only in this process
    assert latest(reopened, "t") == [body + "1", body + "2"]
    assert len([c for c in reopened.session_for("t").get_branch() if c.name == "checkpoint"]) == 1
    reopened.close()
    store.close()


# --- a list channel, incrementally -------------------------------------------------------------
OPS = st.lists(st.one_of(
    st.tuples(st.just("grow"), st.integers(1, 3)),
    st.tuples(st.just("twin"), st.integers(0, 50)),     # an equal element that serializes otherwise
    st.tuples(st.just("copy"), st.integers(0, 50)),     # an equal copy, not the same object
    st.tuples(st.just("cut"), st.integers(0, 50)),
    st.tuples(st.just("fork"), st.integers(0, 50)),     # a put from an older checkpoint
), min_size=1, max_size=14)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_an_incremental_list_encode_is_the_full_encode(tmp_path_factory, ops):
    """Whatever happens to a list channel between puts, each checkpoint's element descriptors
    (its chain of bases and additions) are those a full encode of its value gives, and it reads
    back exactly (repr: True is not 1 here), also in a fresh saver."""
    path = tmp_path_factory.mktemp("lg")
    saver = SessiondagSaver(path / "s", commit_every=0)
    fresh = iter(range(10**6))
    history: list[tuple[str, list, object]] = []  # (checkpoint id, its value, its version)
    cur: list = []
    parent = version = None
    for step, (op, k) in enumerate(ops):
        if op == "grow":
            cur = cur + [{"i": next(fresh), "v": 1} for _ in range(k)]
        elif op in ("twin", "copy") and cur:
            cur = list(cur)
            cur[k % len(cur)] = {**cur[k % len(cur)], "v": True} if op == "twin" else dict(cur[k % len(cur)])
        elif op == "cut":
            cur = cur[:k % (len(cur) + 1)]
        elif op == "fork" and history:
            parent, base, _ = history[k % len(history)]
            cur = base + [{"i": next(fresh), "v": 1}]
        version = saver.get_next_version(version, None)
        parent = put(saver, "t", parent, cur, step, version)
        history.append((parent, cur, version))
    s = saver.session_for("t")
    with s.lock:
        idx = saver.index_of(s)
        for cid, value, ver in history:
            desc = idx.values[("", "messages", ver)]
            if value:
                got = saver.codec.elements(desc, lambda v: idx.values.get(("", "messages", v)))
                assert got == [saver.codec.encode(s.put_blob, e) for e in value]
    saver.close()
    again = SessiondagSaver(path / "s")
    for cid, value, _ in history:
        got = again.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": cid}})
        assert repr(got.checkpoint["channel_values"]["messages"]) == repr(value)
    again.close()


@given(st.text(alphabet=st.sampled_from("ab \n\t\u00a0é"), max_size=1500))
@example("a" * 160 + " " * 600 + "b")   # its head squeezes to exactly PREVIEW characters: more follows
@example(" " * 700 + "a")               # its head squeezes to nothing
def test_a_preview_squeezes_only_the_head_and_shows_what_the_whole_squeeze_would(text):
    from sessiondag.integrations.langgraph.values import PREVIEW, message_preview
    whole = " ".join(text.split())
    expect = f"user: {whole[:PREVIEW]}{'…' if len(whole) > PREVIEW else ''}"
    assert message_preview({"role": "user", "content": text}) == expect
