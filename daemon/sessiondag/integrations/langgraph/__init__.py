"""LangGraph checkpointers on sessiondag: `SessiondagSaver` and `AsyncSessiondagSaver`.

    from sessiondag.integrations.langgraph import SessiondagSaver
    graph = builder.compile(checkpointer=SessiondagSaver("~/.local/state/sessiondag"))
    graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

Needs the `langgraph` extra (`pip install 'sessiondag[langgraph]'`). See docs/integrations.md.
"""

from .async_saver import AsyncSessiondagSaver
from .saver import SessiondagSaver

__all__ = ["SessiondagSaver", "AsyncSessiondagSaver"]
