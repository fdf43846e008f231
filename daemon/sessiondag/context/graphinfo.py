"""Small structural predicates over the graph that every rendering module shares."""

from __future__ import annotations

from ..core.errors import SessionDagError
from ..core.graph import SUMMARY_NAME as SUMMARY_NAME, Graph  # re-exported: stored.py reads it here
from ..core.model import ROOT, Call

SYSTEM_PROMPT_NAME = "context/system_prompt"
CONTEXT_PREFIX = "context/"


class RenderError(SessionDagError):
    """Rendering met data it cannot render faithfully. There is no fallback: the call fails."""

    code = "render_error"

    def __init__(self, message: str, node_id: str | None = None):
        super().__init__(message + (f" (node {node_id!r})" if node_id else ""))
        self.node_id = node_id

    def data(self) -> dict[str, object]:
        return {"node_id": self.node_id}


def is_tool_call(graph: Graph, c: Call) -> bool:
    """A code node the model requested: it carries `metadata.tool_call_id` and an llm node is its caller."""
    if c.role != "code" or c.metadata.get("tool_call_id") is None:
        return False
    owner = graph.nodes.get(c.caller)
    return owner is not None and owner.role == "llm"


def is_anchor(graph: Graph, c: Call) -> bool:
    """A chain node that stands for itself: it renders iff it lies on the head's (substituted) chain.

    Tool-call nodes are the exception: whatever their predecessor, they belong to their owning llm node.
    """
    if c.id == ROOT:
        return False
    if c.predecessor is None and not c.is_spawn_root:
        return False
    return not is_tool_call(graph, c)


def anchor_of(graph: Graph, c: Call) -> str:
    """The nearest anchor walking caller edges upward from `c` (inclusive); ROOT if none."""
    nodes = graph.nodes
    seen = 0
    while c.id != ROOT and not is_anchor(graph, c):
        nxt = nodes.get(c.caller)
        if nxt is None:
            raise RenderError(f"caller {c.caller!r} is missing", c.id)
        c = nxt
        seen += 1
        if seen > len(nodes):
            raise RenderError("caller edges form a cycle", c.id)
    return c.id


def is_hidden_context(c: Call) -> bool:
    """`context/*` nodes are pipeline machinery and never render as turns — except summaries."""
    return c.name.startswith(CONTEXT_PREFIX) and c.name != SUMMARY_NAME


def is_summary(c: Call) -> bool:
    return c.name == SUMMARY_NAME and c.role == "llm"
