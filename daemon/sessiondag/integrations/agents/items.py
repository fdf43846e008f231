"""Agents SDK items <-> session nodes, one node per item.

| item | node |
|---|---|
| `{"role": "user", ...}` (also system / developer) | `user` node named after the role |
| an assistant message (`role: assistant`), `function_call`, `reasoning`, any other `*_call` the model emits | `llm` node (name: `assistant`, or the item type) |
| `function_call_output` (any `*_output` with a `call_id`) | `code` node: caller = the `llm` node of the matching call, `metadata.tool_call_id`, name and `input` (parsed arguments) from the call, `output` = the tool's output — so our renderers show an assistant tool call and its tool result |

Every node keeps its item in `metadata.agents` with its main text moved into `output` (the hole), so
the item comes back byte-for-byte equal and the text is stored once. Pure functions: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

from ... import ROOT, Call

KEY = "agents"
_HOLES = (("content",), ("content", 0, "text"), ("output",))


def _get(item: Any, path: tuple[str | int, ...]) -> Any:
    for p in path:
        if isinstance(p, int):
            if not isinstance(item, list) or len(item) <= p:
                return None
        elif not isinstance(item, dict) or p not in item:
            return None
        item = item[p]
    return item


def _hole(item: dict[str, Any], kind: str) -> tuple[tuple[str | int, ...] | None, Any]:
    """(path, text) of the item's main text, moved out into the node's output (`kind`: kind_of(item))."""
    if kind == "user" and "content" in item:
        return ("content",), item["content"]
    for path in _HOLES:
        v = _get(item, path)
        if isinstance(v, str):
            if path == ("content", 0, "text") and len(item["content"]) != 1:
                continue
            return path, v
    return None, None


def _with(item: Any, path: tuple[str | int, ...], value: Any) -> Any:
    out = copy.copy(item)
    cur = out
    for p in path[:-1]:
        nxt = copy.copy(cur[p])
        cur[p] = nxt
        cur = nxt
    cur[path[-1]] = value
    return out


def kind_of(item: Mapping[str, object]) -> str:
    """'user' | 'llm' | 'result'."""
    t, role = item.get("type"), item.get("role")
    if role in ("user", "system", "developer"):
        return "user"
    if role == "assistant":
        return "llm"
    if isinstance(t, str) and t.endswith("_output") and "call_id" in item:
        return "result"
    return "llm"


def to_call(item: dict[str, Any], predecessor: str, owner: Call | None) -> Call:
    """The node of `item` appended after `predecessor`; `owner` is the llm node of the call a
    result answers (None when none is on the branch)."""
    if not isinstance(item, dict):
        raise TypeError(f"a session item must be a dict, got {type(item).__name__}")
    orjson.dumps(item)  # refuse what cannot be stored as JSON before anything is written
    kind = kind_of(item)
    path, text = _hole(item, kind)
    stored = _with(item, path, None) if path else item
    md: dict[str, Any] = {KEY: {"item": stored, "hole": list(path) if path else None}}
    out = text if path else None
    if kind == "user":
        return Call("user", item.get("role", "user"), output=out, caller=ROOT, predecessor=predecessor, metadata=md)
    if kind == "result" and owner is not None:
        md["tool_call_id"] = str(item["call_id"])
        call_item = owner.metadata[KEY]["item"]
        return Call("code", str(call_item.get("name") or item.get("type")), input=_arguments(call_item),
                    output=out, caller=owner.id, predecessor=predecessor, metadata=md)
    if kind == "result":
        return Call("code", str(item.get("type")), output=out, caller=ROOT, predecessor=predecessor, metadata=md)
    name = "assistant" if item.get("role") == "assistant" else str(item.get("type") or "assistant")
    return Call("llm", name, output=out, caller=ROOT, predecessor=predecessor, metadata=md)


def _arguments(call_item: Mapping[str, object]) -> object:
    args = call_item.get("arguments")
    if isinstance(args, str):
        try:
            return orjson.loads(args)
        except orjson.JSONDecodeError:
            return args
    return args if args is not None else call_item.get("input")


def to_item(node: Call) -> dict[str, Any] | None:
    """The item a node holds (None for nodes this adapter did not write)."""
    rec = node.metadata.get(KEY)
    if not isinstance(rec, dict) or "item" not in rec:
        return None
    item: dict[str, Any] = orjson.loads(orjson.dumps(rec["item"]))  # never hand out the stored objects
    if rec.get("hole"):
        restored: dict[str, Any] = _with(item, tuple(rec["hole"]), orjson.loads(orjson.dumps(node.output)))
        return restored
    return item


def call_id_of(node: Call) -> str | None:
    rec = node.metadata.get(KEY)
    item = rec.get("item") if isinstance(rec, dict) else None
    if isinstance(item, dict) and node.role == "llm" and item.get("call_id") is not None:
        return str(item["call_id"])
    return None
