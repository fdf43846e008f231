"""Tool-result aging: the boundary before which tool results render truncated.

The boundary only advances when a turn commits (`on_turn_commit`, called by the store under the
session lock), never mid-turn, so the rendered prefix stays byte-stable within a turn.
"""

from __future__ import annotations

from typing import Any

from ..core.graph import Graph


def on_turn_commit(graph: Graph) -> dict[str, Any]:
    """Session-meta updates to record with this turn's commit ({} = none). Pure."""
    return {}
