"""A compiled graph with a subgraph that interrupts: the subgraph's checkpoints (namespace
`inner:<task>`) form a spawn branch called by the parent graph's checkpoint node."""

from __future__ import annotations

from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from sessiondag.integrations.langgraph import SessiondagSaver


class S(TypedDict):
    text: str


def build(saver):
    def ask(state: S):
        answer = interrupt("continue?")
        return {"text": state["text"] + f" +{answer}"}

    inner = StateGraph(S)
    inner.add_node("ask", ask)
    inner.add_node("shout", lambda s: {"text": s["text"].upper()})
    inner.add_edge(START, "ask")
    inner.add_edge("ask", "shout")
    inner.add_edge("shout", END)
    outer = StateGraph(S)
    outer.add_node("prep", lambda s: {"text": s["text"] + " prepped"})
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "prep")
    outer.add_edge("prep", "inner")
    outer.add_edge("inner", END)
    return outer.compile(checkpointer=saver)


def test_subgraph_checkpoints_are_a_spawn_branch_called_by_the_parent(tmp_path):
    saver = SessiondagSaver(tmp_path / "state")
    graph = build(saver)
    cfg = {"configurable": {"thread_id": "nested"}}
    out = graph.invoke({"text": "hi"}, cfg)
    assert out["__interrupt__"][0].value == "continue?"
    st = graph.get_state(cfg, subgraphs=True)
    sub = st.tasks[0].state
    ns = sub.config["configurable"]["checkpoint_ns"]
    assert ns.startswith("inner:") and sub.next == ("ask",)
    out = graph.invoke(Command(resume="yes"), cfg)
    assert out["text"] == "HI PREPPED +YES"

    s = saver.session_for("nested")
    sub_nodes = [c for c in s.graph.nodes.values() if c.metadata.get("langgraph", {}).get("ns") == ns
                 and c.metadata["langgraph"]["kind"] == "checkpoint"]
    assert sub_nodes
    spawn = s.get_node(sub_nodes[0].predecessor)
    assert spawn.metadata.get("spawn_branch_root") and spawn.output == ns
    parent = s.get_node(spawn.caller)  # the parent graph's checkpoint that ran the subgraph
    assert parent.metadata["langgraph"]["ns"] == "" and parent.metadata["langgraph"]["kind"] == "checkpoint"
    assert all(c.caller == spawn.id for c in sub_nodes)
    assert any(b.spawn_root == spawn.id for b in s.list_branches())
    main = [c.id for c in s.get_branch()]
    assert not set(main) & {c.id for c in sub_nodes}  # the parent's chain holds only its own checkpoints
    saver.close()
