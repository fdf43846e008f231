"""Run by test_langgraph_graph in a separate process: continue thread argv[2] of store argv[1]."""

import sys

from langchain_core.messages import HumanMessage
from langgraph.types import Command

sys.path.insert(0, __file__.rsplit("/", 3)[0])
from tests.integrations.lg_agent import build  # noqa: E402

from sessiondag.integrations.langgraph import SessiondagSaver  # noqa: E402

with SessiondagSaver(sys.argv[1]) as saver:
    graph = build(saver)
    cfg = {"configurable": {"thread_id": sys.argv[2]}}
    assert graph.get_state(cfg).values["messages"], "the thread's state was not found"
    out = graph.invoke({"messages": [HumanMessage("and once more")]}, cfg)
    assert "__interrupt__" in out
    out = graph.invoke(Command(resume="approve"), cfg)
    print(out["messages"][-1].content)
