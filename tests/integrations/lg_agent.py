"""A small LangGraph agent for the integration tests: a model node, a human-review interrupt before
each tool call, a ToolNode. The model is langchain_core's GenericFakeChatModel with a scripted,
repeating reply list (a replayed step asks it again)."""

from __future__ import annotations

import itertools

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def scripted_model() -> GenericFakeChatModel:
    replies = [
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1", "type": "tool_call"}]),
        AIMessage("2 + 3 = 5"),
    ]
    return GenericFakeChatModel(messages=itertools.cycle(replies))


def build(checkpointer, model=None):
    model = model or scripted_model()

    def agent(state: MessagesState):
        return {"messages": [model.invoke(state["messages"])]}

    def review(state: MessagesState):
        call = state["messages"][-1].tool_calls[0]
        decision = interrupt({"tool": call["name"], "args": call["args"]})
        return {} if decision == "approve" else {"messages": [AIMessage(f"tool call rejected: {decision}")]}

    def route(state: MessagesState):
        last = state["messages"][-1]
        return "review" if getattr(last, "tool_calls", None) else END

    def after_review(state: MessagesState):
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("review", review)
    g.add_node("tools", ToolNode([add]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", route, ["review", END])
    g.add_conditional_edges("review", after_review, ["tools", END])
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)
