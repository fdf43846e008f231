"""The row a branch is on the wire (core/graph.py `Branch.to_dict`, filled in by
core/branch_labels.py `label_all`)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class BranchRow(TypedDict):
    """A branch as session/list_branches sends it (rpc_schema/schemas/branch.json); label, from_turn
    and turns are added by core/branch_labels.py `label_all`."""
    head_id: str
    name: str | None
    main: bool
    current: bool
    spawn_root: str | None
    status: str
    seq: int
    label: NotRequired[str]
    from_turn: NotRequired[int | None]
    turns: NotRequired[int]
