"""Two branches (or two calls) side by side: `session/compare {session_id, a, b}` (docs/replay.md).

Each side is the chain from its start to the node given (a branch tip, or any model call), cut
into turns (a ROOT-level user node, or a spawn branch's root, starts one); each turn lists its
model calls with their text, tool calls (name, arguments, the recorded result; a replay's calls
that were not run have no result), tokens, latency and cost. The turns are aligned by position.
`shared` counts the chain nodes both sides have (the common prefix); `first_divergence` is the
first model call or tool call whose content differs (node ids aside), or where one side stops.
Each side's `usage` is the ledger's total for that branch (context/ledger.py: with sub-agents and
functions called on its behalf).
"""

from __future__ import annotations

from typing import TypedDict

from ..core.graph import Graph
from ..core.model import ROOT, Call
from ..store.session import Session
from ..core.usage import node_usage
from .content import parts_of, text_of
from .ledger import UsageTotals, session_usage

TEXT_CHARS = 4000


class ToolCallStep(TypedDict):
    node_id: str | None          # None: a replay's call that was not run
    name: object                 # as recorded (a replay's metadata.tool_calls entry: any JSON)
    arguments: object            # the node's input, or the recorded arguments
    result: str | None
    status: str


class ModelCall(TypedDict):
    node_id: str
    model: str
    status: str
    text: str
    tool_calls: list[ToolCallStep]
    input_tokens: int
    output_tokens: int
    latency_ms: float
    cost_usd: float | None
    replay_of: object            # metadata.replay_of as recorded


class Turn(TypedDict):
    user_node_id: str | None
    user: str
    calls: list[ModelCall]


class Divergence(TypedDict):
    turn: int
    call: int
    why: str
    a: str | None
    b: str | None


class Side(TypedDict):
    head_id: str
    nodes: int
    usage: UsageTotals           # the ledger's total row (context/ledger.py)


class AlignedTurn(TypedDict):
    index: int
    a: Turn | None
    b: Turn | None


class Comparison(TypedDict):
    """session/compare's result (without its session_id)."""
    a: Side
    b: Side
    shared: int
    turns: list[AlignedTurn]
    first_divergence: Divergence | None


def _text(v: object) -> str:
    try:
        t = text_of(parts_of(v))
    except Exception:  # noqa: BLE001 - a hostile body still compares, as its repr
        t = repr(v)
    return t[:TEXT_CHARS]


def _tool_calls(g: Graph, c: Call) -> list[ToolCallStep]:
    out: list[ToolCallStep] = []
    for k in g.children_by_caller(c.id):
        t = g.nodes[k]
        if t.role == "code" and "tool_call_id" in t.metadata:
            out.append({"node_id": t.id, "name": t.name, "arguments": t.input, "result": _text(t.output),
                        "status": t.status})
    if not out and isinstance(c.metadata.get("tool_calls"), list):  # a replay's, not run
        out = [{"node_id": None, "name": tc.get("name"), "arguments": tc.get("arguments"), "result": None,
                "status": "not_run"} for tc in c.metadata["tool_calls"] if isinstance(tc, dict)]
    return out


def _step(g: Graph, c: Call) -> ModelCall:
    u = node_usage(c)
    return {"node_id": c.id, "model": u.model_key, "status": c.status, "text": _text(c.output),
            "tool_calls": _tool_calls(g, c), "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "latency_ms": u.latency_ms, "cost_usd": None if u.cost_pusd is None else u.cost_pusd / 10 ** 12,
            "replay_of": c.metadata.get("replay_of")}


def turns_of(g: Graph, chain: list[Call]) -> list[Turn]:
    turns: list[Turn] = []
    for c in chain:
        starts = (c.role == "user" and c.caller == ROOT) or c.is_spawn_root
        if starts or (not turns and c.role == "llm"):  # calls before any turn: a turn without a user
            turns.append({"user_node_id": c.id if starts else None, "user": _text(c.output) if starts else "",
                          "calls": []})
        if c.role == "llm":
            turns[-1]["calls"].append(_step(g, c))
    return turns


def _key(step: ModelCall) -> tuple[object, list[tuple[object, object]]]:
    return (step["text"], [(t["name"], t["arguments"]) for t in step["tool_calls"]])


def first_divergence(ta: list[Turn], tb: list[Turn]) -> Divergence | None:
    for i in range(max(len(ta), len(tb))):
        if i >= len(ta) or i >= len(tb):
            return {"turn": i, "call": 0, "why": "only one side has this turn", "a": None, "b": None}
        if ta[i]["user"] != tb[i]["user"]:
            return {"turn": i, "call": 0, "why": "the user messages differ", "a": ta[i]["user_node_id"],
                    "b": tb[i]["user_node_id"]}
        ca, cb = ta[i]["calls"], tb[i]["calls"]
        for j in range(max(len(ca), len(cb))):
            if j >= len(ca) or j >= len(cb):
                return {"turn": i, "call": j, "why": "only one side makes this model call",
                        "a": ca[j]["node_id"] if j < len(ca) else None, "b": cb[j]["node_id"] if j < len(cb) else None}
            if _key(ca[j]) != _key(cb[j]):
                why = "the answers differ" if ca[j]["text"] != cb[j]["text"] else "the tool calls differ"
                return {"turn": i, "call": j, "why": why, "a": ca[j]["node_id"], "b": cb[j]["node_id"]}
    return None


def compare(session: Session, a: str, b: str) -> Comparison:
    """The comparison of the chains ending at `a` and `b` (caller holds the session lock)."""
    g = session.graph
    chain_a, chain_b = g.get_branch(a), g.get_branch(b)
    shared = 0
    for x, y in zip(chain_a, chain_b):
        if x.id != y.id:
            break
        shared += 1
    ta, tb = turns_of(g, chain_a), turns_of(g, chain_b)
    rows: list[AlignedTurn] = [{"index": i, "a": ta[i] if i < len(ta) else None, "b": tb[i] if i < len(tb) else None}
            for i in range(max(len(ta), len(tb)))]
    return {"a": {"head_id": a, "nodes": len(chain_a), "usage": session_usage(session, "model", a)["total"]},
            "b": {"head_id": b, "nodes": len(chain_b), "usage": session_usage(session, "model", b)["total"]},
            "shared": shared, "turns": rows, "first_divergence": first_divergence(ta, tb)}
