"""The result types of the client, built from the wire fields (rpc_schema/schemas/*.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Mapping, Sequence

from .codec import gc_paused


@dataclass
class Call:
    """A node (rpc_schema/schemas/call.json)."""

    role: str
    name: str
    input: Any = None
    output: Any = None
    status: str = "completed"
    caller: str = "ROOT"
    predecessor: str | None = None
    reads: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    seq: int = -1
    created_at: float = 0.0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Call":
        """The node of a wire object. A node as the daemon sends it (exactly the twelve fields,
        none of the defaulted ones null) becomes the Call's attribute dict itself — no copy, no
        __init__: decoding a 100k-node branch is one C-level check and one object a node. Anything
        else (fields left out, nulls, extra fields) goes through the constructor (`_build`)."""
        if type(d) is dict and d.keys() == _FIELD_SET and None not in _defaulted(d):
            o = _new(cls)
            o.__dict__ = d
            return o
        return cls._build(d)

    @classmethod
    def _build(cls, d: Mapping[str, Any]) -> "Call":
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and v is not None}
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_new = object.__new__
_FIELD_SET = frozenset(Call.__dataclass_fields__)
# fields whose null on the wire means "the default" (the constructor path drops them)
_defaulted = itemgetter("reads", "metadata", "caller", "status", "id", "seq", "created_at", "role", "name")

MANY = 2000  # nodes: a list this long is decoded with the cyclic GC paused


def calls_of(items: Sequence[Mapping[str, Any]]) -> list[Call]:
    """`Call.from_dict` of each wire node, a long list (a whole branch) with the cyclic GC paused:
    one object a node and no cycles, which the collector would rescan again and again meanwhile."""
    with gc_paused(len(items) >= MANY):
        return [Call.from_dict(d) for d in items]


@dataclass(frozen=True)
class Branch:
    """One branch of a session (rpc_schema/schemas/branch.json)."""

    head_id: str
    name: str | None
    main: bool
    current: bool
    spawn_root: str | None
    status: str
    seq: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Branch":
        fields: dict[str, Any] = {k: d.get(k) for k in cls.__dataclass_fields__}
        return cls(**fields)


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class SessionHandle:
    """What session/open, start and resume answer (rpc_schema/schemas/session_handle.json)."""

    id: str
    path: str
    working_dir: str | None
    schema_version: int
    head_id: str
    usage_delta: Usage
    usage_total: Usage

    @property
    def session_id(self) -> str:
        return self.id

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SessionHandle":
        return cls(d["session_id"], d["path"], d["working_dir"], d["schema_version"], d["head_id"],
                   Usage(**d["usage_delta"]), Usage(**d["usage_total"]))


@dataclass(frozen=True)
class BranchPage:
    """One page of session/get_branch: `next_cursor` goes to `after` (asc) or `before` (desc)."""

    nodes: list[Call]
    head_id: str
    next_cursor: str | None
    total: int

