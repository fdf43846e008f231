"""Rendering raises on broken data; there is no fallback assembly."""

import pytest

from sessiondag import Call, ROOT
from sessiondag.context.aging import ManifestError, current_manifest
from sessiondag.context.compaction import compact
from sessiondag.context.graphinfo import RenderError
from sessiondag.context.messages import render_messages
from sessiondag.context.render import render_context
from sessiondag.core.errors import BrokenPredecessorChainError, InvalidNodeError, NotFoundError

from .harness import build

BASE = [
    {"id": "u1", "role": "user", "out": "a", "pred": ROOT},
    {"id": "l1", "role": "llm", "out": "b", "caller": "u1", "pred": "u1"},
    {"id": "u2", "role": "user", "out": "c", "pred": "l1"},
    {"id": "l2", "role": "llm", "out": "d", "caller": "u2", "pred": "u2"},
]


def test_dangling_predecessor_raises(session):
    build(session, BASE)
    session.graph.nodes["u2"].predecessor = "gone"  # corrupted record (the store would refuse it)
    with pytest.raises(BrokenPredecessorChainError):
        render_context(session, "l2")


def test_unknown_head_raises(session):
    build(session, BASE)
    with pytest.raises(NotFoundError):
        render_context(session, "nope")


def test_missing_active_summary_raises(session):
    build(session, BASE)
    session.set_meta("active_summary", "ghost")
    with pytest.raises(RenderError):
        render_context(session, "l2")


def test_non_contiguous_covers_raise(session):
    build(session, BASE)
    s = session.append(Call("llm", "context/summary", output="x", predecessor=ROOT,
                            metadata={"covers_ids": ["u1", "u2", "l2"]}))
    session.set_meta("active_summary", s.id)
    with pytest.raises(RenderError):
        render_context(session, "l2")


def test_bad_expose_raises(session):
    build(session, BASE + [{"id": "f", "role": "code", "caller": "u2", "expose": "sometimes", "out": 1}])
    with pytest.raises(RenderError):
        render_context(session, "l2")


def test_tool_call_off_its_owner_chain_raises(session):
    build(session, BASE + [
        {"id": "l2x", "role": "llm", "out": "alt", "caller": "u2", "pred": "u2"},
        {"id": "t", "role": "code", "out": "r", "caller": "l2x", "pred": "l2", "tcid": "c1"},
    ])
    with pytest.raises(RenderError):
        render_context(session, "t")


def test_frame_off_the_chain_raises(session):
    build(session, BASE + [
        {"id": "u2b", "role": "user", "out": "other", "pred": "l1"},
        {"id": "f", "role": "code", "caller": "u2b", "status": "running"},
    ])
    with pytest.raises(RenderError):
        render_context(session, "l2", frame="f")
    with pytest.raises(RenderError):
        render_context(session, "l2", frame="l1")  # not a code node


def test_bad_manifests_raise(session):
    build(session, BASE)
    m = current_manifest(session)
    with pytest.raises(ManifestError):
        render_context(session, "l2", manifest={**m, "policy_version": 999})
    with pytest.raises(ManifestError):
        render_context(session, "l2", manifest={k: v for k, v in m.items() if k != "aged_before_seq"})
    with pytest.raises(RenderError):
        render_context(session, "l2", manifest={**m, "last_seq": 1})  # head newer than the manifest


def test_compact_refuses_bad_runs(session):
    build(session, BASE + [
        {"id": "l3", "role": "llm", "out": None, "caller": "u2", "pred": "l2"},
        {"id": "t", "role": "code", "out": "r", "caller": "l3", "pred": "l3", "tcid": "c1"},
    ])
    with pytest.raises(InvalidNodeError):
        compact(session, ["u1", "u2"], "gap")            # not contiguous
    with pytest.raises(InvalidNodeError):
        compact(session, ["l1", "u1"], "reversed")       # not oldest-first
    with pytest.raises(InvalidNodeError):
        compact(session, ["u2", "l2", "l3"], "split")    # would orphan tool result t
    with pytest.raises(InvalidNodeError):
        compact(session, ["u1"], "")


def test_system_prompt_must_be_text(session):
    build(session, BASE)
    session.append(Call("code", "context/system_prompt", output={"not": "text"}, predecessor="l2"))
    with pytest.raises(RenderError):
        render_messages(session)


@pytest.mark.parametrize("damage", ["dangling", "orphan", "not_preceding"])
def test_list_branches_raises_on_broken_data_like_get_branch(session, damage):
    build(session, BASE)
    u2 = session.graph.nodes["u2"]  # corrupted records (the store would refuse them)
    u2.predecessor = {"dangling": "gone", "orphan": None, "not_preceding": "l2"}[damage]
    with pytest.raises(BrokenPredecessorChainError):
        session.get_branch("l2")
    with pytest.raises(BrokenPredecessorChainError) as ei:
        session.list_branches()
    assert ei.value.node_id == "u2"


def test_list_branches_on_sound_data_lists_every_tip(session):
    build(session, BASE + [{"id": "u2b", "role": "user", "out": "fork", "pred": "l1"}])
    assert {b.head_id for b in session.list_branches()} == {"l2", "u2b"}
