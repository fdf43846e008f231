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

import threading
from sys import intern
from typing import Any, final

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


_LAZY: Any = object()  # a body field not decoded yet (see Call.encoded / call_from_raw)
LAZY_BODY = _LAZY  # the same sentinel, for core/node_fold.py
_BODY_LOCK = threading.Lock()
_BODY = ("input", "output", "reads", "metadata")
_STATUS = {s: s for s in STATUSES}
_ROLE = {r: r for r in ROLES}
INTERNED_ROLES, INTERNED_STATUSES = _ROLE, _STATUS  # one string object per role and status


@final   # no subclass: `type(x) is Call` tells a node from anything else, for mypy too
class Call:
    """One node. Skeleton fields are plain slots; the body (`input`, `output`, `reads`, `metadata`)
    of a node loaded from a snapshot stays as its stored JSON line (`encoded()`) until first read —
    or, until then, in storage: `_raw` may hold a deferred reference (any object with
    `resolve(call) -> bytes`, called under the body lock) that fetches the line on first use.

    The encoded form is cached: `encoded()` is the node's wire JSON, reused for every response
    until the node changes (setting a body field drops it; `Graph.apply_update` calls `touch()`).
    """

    __slots__ = ("role", "name", "status", "caller", "predecessor", "id", "seq", "created_at",
                 "_input", "_output", "_reads", "_metadata", "_raw", "_spawn", "line_span")
    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __init__(self, role: str, name: str, *, input: Any = None, output: Any = None,
                 status: str = "completed", caller: str = ROOT, predecessor: str | None = None,
                 reads: list[str] | None = None, metadata: dict[str, Any] | None = None,
                 id: str | None = None, seq: int = -1, created_at: float = 0.0) -> None:
        self.role = role
        self.name = name
        self.status = status
        self.caller = caller
        self.predecessor = predecessor
        self.id = mint_node_id() if id is None else id
        self.seq = seq
        self.created_at = created_at
        self._input = input
        self._output = output
        self._reads = [] if reads is None else reads
        self._metadata = {} if metadata is None else metadata
        self._raw: Any = None   # bytes, a deferred body (anything with `resolve(call)`), or None
        validate_fields(self.role, self.status, self.name, self.caller, self.predecessor, self._reads,
                        self._metadata, self.id)
        self._spawn = bool(self._metadata.get("spawn_branch_root"))
        self.line_span = 0  # where the output lies in the stored line, as the node index recorded it

    # --- the lazily decoded body -----------------------------------------------------------------
    # Decoding, changing the body and caching an encoding happen under one process-wide lock, so a
    # reader decoding a node while another thread updates it can neither see a half-decoded body
    # nor write back a stale one (nor cache a stale encoding: Graph.apply_update touches last).
    def _load(self) -> None:
        with _BODY_LOCK:
            self._decode()

    def _decode(self) -> None:  # caller holds _BODY_LOCK
        if self._metadata is _LAZY:
            raw = self._raw
            if type(raw) is not bytes:  # the body is still in storage: fetch it (see encoded)
                raw = self._raw = raw.resolve(self)
            d = orjson.loads(raw)
            self._input, self._output, self._reads = d["input"], d["output"], d["reads"]
            self._metadata = d["metadata"]  # last: readers test it

    def _set(self, slot: str, value: Any) -> None:
        with _BODY_LOCK:
            self._decode()
            object.__setattr__(self, slot, value)
            self._raw = None

    @property
    def input(self) -> Any:
        if self._metadata is _LAZY:
            self._load()
        return self._input

    @input.setter
    def input(self, v: Any) -> None:
        self._set("_input", v)

    @property
    def output(self) -> Any:
        if self._metadata is _LAZY:
            self._load()
        return self._output

    @output.setter
    def output(self, v: Any) -> None:
        self._set("_output", v)

    @property
    def reads(self) -> list[str]:
        if self._metadata is _LAZY:
            self._load()
        return self._reads

    @reads.setter
    def reads(self, v: list[str]) -> None:
        self._set("_reads", v)

    @property
    def metadata(self) -> dict[str, Any]:
        if self._metadata is _LAZY:
            self._load()
        return self._metadata

    @metadata.setter
    def metadata(self, v: dict[str, Any]) -> None:
        self._set("_metadata", v)
        self._spawn = bool(isinstance(v, dict) and v.get("spawn_branch_root"))

    def touch(self) -> None:
        """The node is about to change (or just changed) outside the body setters: decode the body
        and drop the cached encoding."""
        with _BODY_LOCK:
            self._decode()
            self._raw = None

    def stored_line(self) -> bytes | None:
        """The stored JSON line while the body is still undecoded, else None: a reader may slice
        already-encoded values out of it instead of decoding the body (context/stored.py)."""
        raw = self._raw  # read before the test: a concurrent decode keeps it, a change drops it
        if raw is not None and type(raw) is not bytes:  # still in storage: read it (see encoded)
            with _BODY_LOCK:
                raw = self._raw
                if raw is not None and type(raw) is not bytes:
                    raw = self._raw = raw.resolve(self)
        return raw if self._metadata is _LAZY else None

    def encoded(self, keep: bool = True) -> bytes:
        """The node's JSON (`to_dict()` encoded), cached until the node changes (`keep=False`:
        encode without caching, for one-off writers that should not grow memory)."""
        raw = self._raw
        if type(raw) is not bytes:
            with _BODY_LOCK:
                raw = self._raw
                if raw is not None and type(raw) is not bytes:
                    # a deferred body (store/node_index.py): `resolve` reads the node's stored line
                    raw = self._raw = raw.resolve(self)
                elif raw is None:
                    self._decode()
                    raw = orjson.dumps(self.to_dict())
                    if keep:
                        self._raw = raw
        encoded: bytes = raw
        return encoded

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
        return self._spawn and self.predecessor is None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    # --- serialization -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        if self._metadata is _LAZY:
            self._load()
        return {
            "id": self.id, "seq": self.seq, "created_at": self.created_at, "role": self.role,
            "name": self.name, "input": self._input, "output": self._output, "status": self.status,
            "caller": self.caller, "predecessor": self.predecessor, "reads": list(self._reads),
            "metadata": self._metadata,
        }

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Call):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return "Call(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"

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


_new = object.__new__


def call_from_record(d: dict[str, Any]) -> Call:
    """Rebuild a node from a record the store wrote itself (validated when it was written)."""
    c = _new(Call)
    c.id, c.seq, c.created_at, c.role, c.name = d["id"], d["seq"], d["created_at"], d["role"], d["name"]
    c.status, c.caller, c.predecessor = d["status"], d["caller"], d["predecessor"]
    c._input, c._output, c._reads, md = d["input"], d["output"], d["reads"], d["metadata"]
    c._metadata = md
    c._raw = None
    c._spawn = bool(md.get("spawn_branch_root")) if md else False
    c.line_span = 0
    return c


def call_from_raw(d: dict[str, Any], raw: bytes, ids: dict[str, Call]) -> Call:
    """A node from a stored record `d` (parsed from `raw`, its exact JSON) whose body stays in
    `raw` until read: the skeleton is kept, the parsed body is dropped. Repeated strings are
    shared (roles, statuses, names interned; caller/predecessor ids point at the node's own id
    string when that node is in `ids`)."""
    md = d["metadata"]
    d["input"], d["output"], d["reads"]  # noqa: B018 - a record missing its body fails here, at open
    return call_from_skeleton((d["id"], d["seq"], d["created_at"], d["role"], d["name"], d["status"], d["caller"],
                               d["predecessor"], bool(md.get("spawn_branch_root")) if md else False), raw, ids)


def call_from_skeleton(row: Any, raw: Any, ids: dict[str, Call], span: int = 0) -> Call:
    """A node from its index row `[id, seq, created_at, role, name, status, caller, predecessor,
    spawn]` (store/node_index.py) and its stored line `raw`, which stays its body until read: the
    same node as call_from_raw(loads(raw), raw, ids) without parsing the body. `span`: the index's
    record of where the output lies in that line (`line_span`; store/line_shape.py), 0 for none."""
    c = _new(Call)
    nid, c.seq, c.created_at, role, name, status, caller, pred, spawn = row
    c.id = nid
    c.role, c.status, c.name = _ROLE.get(role, role), _STATUS.get(status, status), intern(name)
    x = ids.get(caller)
    c.caller = x.id if x is not None else (ROOT if caller == ROOT else caller)
    if pred is not None:
        x = ids.get(pred)
        pred = x.id if x is not None else (ROOT if pred == ROOT else pred)
    c.predecessor = pred
    c._spawn = bool(spawn)
    c._input = c._output = c._reads = c._metadata = _LAZY
    c._raw = raw
    c.line_span = span
    return c


def validate_fields(role: object, status: object, name: object, caller: object, predecessor: object,
                    reads: object, metadata: object, node_id: object) -> None:
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


def error_metadata(exc: BaseException, trace: str) -> dict[str, str]:
    """The structured `metadata.error` an error node carries (`code`: a typed error's stable kind)."""
    out = {"type": type(exc).__name__, "message": str(exc), "trace": trace}
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        out["code"] = code
    return out
