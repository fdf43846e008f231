"""The node model: one `Call` type for every user message, LLM call and function/tool call.

Edges (never conflated):
- `caller`: who invoked this node. Top-level nodes hang on ROOT; nested calls point at their caller.
- `predecessor`: chat order. Top-level field and the only place this edge lives. A fork is one
  predecessor with several conversational children. The sentinel `"ROOT"` marks a first node or an
  explicit root fork; `None` means "not on a chat chain" (nested calls, spawn-branch roots).

Token usage lives in `metadata` under the OpenTelemetry gen_ai names
(`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, `gen_ai.request.model`).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import orjson

from .errors import InvalidNodeError
from .ids import mint_node_id

ROOT = "ROOT"
ROLES = frozenset({"user", "llm", "code"})
STATUSES = frozenset({"running", "completed", "error", "cancelled"})
TERMINAL_STATUSES = frozenset({"completed", "error", "cancelled"})
CONVERSATIONAL_ROLES = frozenset({"user", "llm"})

USAGE_INPUT = "gen_ai.usage.input_tokens"
USAGE_OUTPUT = "gen_ai.usage.output_tokens"
MODEL_KEY = "gen_ai.request.model"

# The fields a serialized node carries, in wire order.
FIELDS = ("id", "seq", "created_at", "role", "name", "input", "output", "status",
          "caller", "predecessor", "reads", "metadata")
# The fields `update` may change.
UPDATABLE = frozenset({"output", "status", "metadata"})


@dataclass(slots=True)
class Call:
    role: str
    name: str
    _: KW_ONLY
    input: Any = None
    output: Any = None
    status: str = "completed"
    caller: str = ROOT
    predecessor: str | None = None
    reads: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=mint_node_id)
    seq: int = -1
    created_at: float = 0.0

    def __post_init__(self) -> None:
        validate_fields(self.role, self.status, self.name, self.caller, self.predecessor, self.reads, self.metadata, self.id)

    # --- derived facts -------------------------------------------------------------------------
    @property
    def is_root(self) -> bool:
        return self.id == ROOT

    @property
    def is_conversational(self) -> bool:
        return self.role in CONVERSATIONAL_ROLES

    @property
    def is_root_level(self) -> bool:
        return self.caller == ROOT and self.id != ROOT

    @property
    def is_spawn_root(self) -> bool:
        return bool(self.metadata.get("spawn_branch_root")) and self.predecessor is None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    # --- serialization -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "seq": self.seq, "created_at": self.created_at, "role": self.role,
            "name": self.name, "input": self.input, "output": self.output, "status": self.status,
            "caller": self.caller, "predecessor": self.predecessor, "reads": list(self.reads),
            "metadata": self.metadata,
        }

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Call":
        if not isinstance(d, dict):
            raise InvalidNodeError(f"a node must be an object, got {type(d).__name__}")
        unknown = set(d) - set(FIELDS)
        if unknown:
            raise InvalidNodeError(f"unknown node fields: {sorted(unknown)}")
        for key in ("role", "name"):
            if key not in d:
                raise InvalidNodeError(f"node is missing {key!r}")
        kwargs = {k: d[k] for k in FIELDS if k in d and k not in ("role", "name")}
        if kwargs.get("reads") is None:
            kwargs.pop("reads", None)
        if kwargs.get("metadata") is None:
            kwargs.pop("metadata", None)
        if kwargs.get("caller") is None:
            kwargs.pop("caller", None)
        if "id" in kwargs and kwargs["id"] is None:
            kwargs.pop("id")
        seq = kwargs.get("seq", -1)
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise InvalidNodeError("seq must be an integer")
        ts = kwargs.get("created_at", 0.0)
        if not isinstance(ts, (int, float)) or isinstance(ts, bool):
            raise InvalidNodeError("created_at must be a number")
        return cls(d["role"], d["name"], **kwargs)


def _make_trusted_constructor():
    # Generated straight-line assignments: ~3x faster than a loop of setattr calls, and the cold
    # open of a session builds one Call per stored node.
    src = ("def call_from_record(d, _new=object.__new__, _C=Call):\n"
           '    """Rebuild a node from a record the store wrote itself (validated when it was written)."""\n'
           "    c = _new(_C)\n" + "".join(f"    c.{k} = d[{k!r}]\n" for k in FIELDS) + "    return c\n")
    ns: dict[str, Any] = {"Call": Call}
    exec(src, ns)
    return ns["call_from_record"]


call_from_record = _make_trusted_constructor()


def validate_fields(role: Any, status: Any, name: Any, caller: Any, predecessor: Any,
                    reads: Any, metadata: Any, node_id: Any) -> None:
    if role not in ROLES:
        raise InvalidNodeError(f"unknown role {role!r}; expected one of {sorted(ROLES)}")
    if status not in STATUSES:
        raise InvalidNodeError(f"unknown status {status!r}; expected one of {sorted(STATUSES)}")
    if not isinstance(name, str):
        raise InvalidNodeError("name must be a string")
    if not isinstance(caller, str) or not caller:
        raise InvalidNodeError("caller must be a node id")
    if predecessor is not None and (not isinstance(predecessor, str) or not predecessor):
        raise InvalidNodeError("predecessor must be a node id, 'ROOT' or null")
    if not isinstance(reads, list) or not all(isinstance(r, str) for r in reads):
        raise InvalidNodeError("reads must be a list of node ids")
    if not isinstance(metadata, dict):
        raise InvalidNodeError("metadata must be an object")
    if not isinstance(node_id, str) or not node_id or len(node_id) > 128:
        raise InvalidNodeError("id must be a non-empty string of at most 128 characters")


def make_root(created_at: float) -> Call:
    return Call("code", "session", id=ROOT, seq=0, created_at=created_at, status="completed",
                caller=ROOT, predecessor=None)


def usage_of(call: Call) -> tuple[int, int]:
    """(input_tokens, output_tokens) recorded on an llm node; (0, 0) otherwise."""
    if call.role != "llm":
        return (0, 0)
    md = call.metadata
    i, o = md.get(USAGE_INPUT, 0), md.get(USAGE_OUTPUT, 0)
    return (i if isinstance(i, int) else 0, o if isinstance(o, int) else 0)


def error_metadata(exc: BaseException, trace: str) -> dict[str, Any]:
    """The structured `metadata.error` an error node carries."""
    return {"type": type(exc).__name__, "message": str(exc), "trace": trace}
