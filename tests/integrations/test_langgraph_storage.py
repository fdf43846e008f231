"""How SessiondagSaver stores checkpoints: values once (content-addressed), growing lists as deltas,
forks from any checkpoint, subgraph namespaces as spawn branches called by the parent checkpoint,
prune as hiding (the nodes stay), typed errors for bad input."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from sessiondag import ROOT
from sessiondag.integrations.langgraph import SessiondagSaver
from sessiondag.integrations.langgraph.values import INLINE_MAX


def put(saver, thread, parent, messages, step, ns="", parents=None, version=None):
    cp = empty_checkpoint()
    version = version or saver.get_next_version(None, None)
    cp.update(id=str(uuid6(clock_seq=step)), channel_values={"messages": list(messages)},
              channel_versions={"messages": version})
    conf = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    if parent:
        conf["configurable"]["checkpoint_id"] = parent
    md = {"source": "loop", "step": step, "parents": parents or {}}
    return saver.put(conf, cp, md, {"messages": version})["configurable"]["checkpoint_id"]


def git_bytes(saver, thread):
    path = os.path.join(saver.session_for(thread).path, "git")
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def test_growing_chat_stores_each_message_once(tmp_path):
    saver = SessiondagSaver(tmp_path / "s", commit_every=0)
    msgs, parent, version = [], None, None
    for i in range(120):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} " + "word " * 200})
        version = saver.get_next_version(version, None)
        parent = put(saver, "chat", parent, msgs, i, version=version)
    s = saver.session_for("chat")
    nodes = [c for c in s.get_branch() if c.name == "checkpoint"]
    assert len(nodes) == 120
    assert nodes[0].metadata["langgraph"]["values"]["messages"]["L"]["base"] is None
    for c in nodes[1:]:  # every step stores only the message it added
        lst = c.metadata["langgraph"]["values"]["messages"]["L"]
        assert lst["base"] is not None and len(lst["add"]) == 1
        role = "user" if c.input["step"] % 2 == 0 else "assistant"
        (preview,) = c.output["messages"]  # a one-line preview for readers of the DAG, cut short
        assert preview.startswith(f"{role}: {c.input['step']} word word") and preview.endswith("…")
        assert len(preview) < 200
    saver.commit()
    body = sum(len(m["content"]) for m in msgs)
    assert git_bytes(saver, "chat") < 3 * body  # whole-state copies would be ~60x
    # every checkpoint reads back exactly, also from a fresh process view
    saver.close()
    saver = SessiondagSaver(tmp_path / "s")
    for k, c in enumerate(nodes):
        got = saver.get_tuple({"configurable": {"thread_id": "chat", "checkpoint_ns": "", "checkpoint_id": c.id}})
        assert got.checkpoint["channel_values"]["messages"] == msgs[:k + 1]
    saver.close()


def test_large_values_are_content_addressed_blobs_stored_once(tmp_path):
    saver = SessiondagSaver(tmp_path / "s")
    doc = "lorem ipsum " * 2000  # > INLINE_MAX: a blob
    cp = empty_checkpoint()
    parent = None
    for step in range(5):  # the same body at five versions, and once more in a second channel
        cp = {**cp, "id": str(uuid6(clock_seq=step)), "channel_values": {"doc": doc, "copy": doc},
              "channel_versions": {"doc": str(step), "copy": str(step)}}
        conf = {"configurable": {"thread_id": "t", "checkpoint_ns": "", **({"checkpoint_id": parent} if parent else {})}}
        parent = saver.put(conf, cp, {"step": step}, {"doc": str(step), "copy": str(step)})["configurable"]["checkpoint_id"]
    s = saver.session_for("t")
    refs = {c.metadata["langgraph"]["values"][ch]["b"]["$blob"] for c in s.get_branch() for ch in ("doc", "copy")}
    assert len(refs) == 1
    assert s.load_blob(refs.pop()) == saver.serde.dumps_typed(doc)[1]
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["channel_values"] == {"doc": doc, "copy": doc}
    saver.close()


ops = st.lists(st.tuples(st.sampled_from(["append", "fork", "replace"]), st.integers(0, 10_000),
                         st.integers(1, 3)), min_size=1, max_size=30)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops)
def test_any_history_of_appends_forks_and_rewrites_reads_back(tmp_path_factory, ops):
    """Invariant: whatever the sequence of puts (extend the list, fork from any earlier checkpoint,
    replace the list), every checkpoint reads back the exact list it was put with."""
    saver = SessiondagSaver(tmp_path_factory.mktemp("h"), commit_every=0)
    expected: dict[str, list] = {}
    order: list[str] = []
    head, msgs, version = None, [], None
    for n, (op, pick, k) in enumerate(ops):
        if op == "fork" and order:
            head = order[pick % len(order)]
            msgs = list(expected[head])
        elif op == "replace":
            msgs = msgs[: pick % (len(msgs) + 1)]
        msgs = msgs + [{"i": n, "j": j, "text": "x" * (pick % (2 * INLINE_MAX))} for j in range(k)]
        version = saver.get_next_version(version, None)
        head = put(saver, "t", head, msgs, n, version=version)
        expected[head] = list(msgs)
        order.append(head)
    for cid, want in expected.items():
        got = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": cid}})
        assert got.checkpoint["channel_values"]["messages"] == want
    saver.close()


def test_subgraph_namespace_is_a_spawn_branch_of_the_parent_checkpoint(tmp_path):
    saver = SessiondagSaver(tmp_path / "s")
    root = put(saver, "t", None, [1, 2], 0)
    a = put(saver, "t", None, [3, 4], 1, ns="inner:abc", parents={"": root})
    b = put(saver, "t", a, [3, 4, 5], 2, ns="inner:abc", parents={"": root})
    s = saver.session_for("t")
    na, nb = s.get_node(a), s.get_node(b)
    spawn = s.get_node(na.predecessor)
    assert spawn.metadata["spawn_branch_root"] and spawn.caller == root and spawn.output == "inner:abc"
    assert na.caller == spawn.id and nb.predecessor == a and nb.caller == spawn.id
    assert any(br.spawn_root == spawn.id and br.head_id == b for br in s.list_branches())
    assert s.head_id == root  # the parent graph's head is not moved by the subgraph
    tup = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "inner:abc"}})
    assert tup.checkpoint["id"] == b and tup.parent_config["configurable"]["checkpoint_id"] == a
    saver.close()


def test_prune_hides_but_keeps_the_nodes(tmp_path):
    saver = SessiondagSaver(tmp_path / "s")
    ids = [None]
    for i in range(4):
        ids.append(put(saver, "t", ids[-1], [i, i], i))
    saver.prune(["t"])
    listed = [t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": "t"}})]
    assert listed == [ids[-1]]
    s = saver.session_for("t")
    assert [c.id for c in s.get_branch()] == ids[1:]  # history intact on the DAG
    assert saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_id": ids[1]}}) is None
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["id"] == ids[-1]
    saver.close()


def test_bad_input_is_a_typed_error_and_writes_nothing(tmp_path):
    saver = SessiondagSaver(tmp_path / "s")
    with pytest.raises(KeyError):
        saver.put({"configurable": {}}, empty_checkpoint(), {}, {})
    with pytest.raises(ValueError):
        saver.prune(["t"], strategy="bogus")
    assert saver.get_tuple({"configurable": {"thread_id": "nope"}}) is None
    assert list(saver.list({"configurable": {"thread_id": "nope"}})) == []
    first = put(saver, "odd thread/id with spaces ✓", None, [1, 2], 0)
    s = saver.session_for("odd thread/id with spaces ✓")
    assert s.id.startswith("lg-h-") and s.get_node(first).predecessor == ROOT
    assert [t.config["configurable"]["thread_id"] for t in saver.list(None)] == ["odd thread/id with spaces ✓"]
    saver.close()
