"""A node's wire fragment: the piece of the provider messages one node renders to, kept per node in
the render cache (keyed by format, aging cut and whether the node is an open frame).

Per node: a user node → a user message (memory prefetch first, as a <memory> block); an llm node →
an assistant message (an inner call's `input` first as a user message); a summary → a user message;
a tool-call code node → a tool call on its owner's message + a tool result; any other code node → a
text pair (assistant "Called name(args)", user "name returned: …"); an open frame → its call half.
Code results older than the manifest's aging boundary are truncated to its `max_result_chars`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orjson import Fragment

from ..core.graph import Graph
from ..core.mcp_config import function_name_of
from ..core.model import Call
from . import stored
from .aging import age_text
from .content import canonical_json, parts_of, text_of, wire_parts
from .encoded_messages import Message
from .graphinfo import RenderError, is_summary, is_tool_call

Load = Callable[[str], bytes] | None   # a blob's bytes by id (Session.load_blob), for attachments
# a node's wire fragment, as the render cache keeps it: ("msgs", [messages]) | ("llm", [messages
# before the reply], reply text) | ("tool", tool call, tool result) — tagged by its first item, which
# the hot loop reads into a local (mypy narrows a tuple union by the item, not through that local)
Piece = tuple[Any, ...]


def cached_fragment(frags: dict[str, dict[tuple[str | int | bool, ...], Any]], g: Graph, c: Call, fmt: str,
                     aged: int, is_open: bool, load: Load) -> Piece:
    """The wire fragment of one node, from the render cache or built once and kept there (keyed by
    format, aging cut and whether the node is an open frame)."""
    key = (fmt, aged, is_open)
    per = frags.get(c.id)
    frag = per.get(key) if per is not None else None
    if frag is None:
        frag = _fragment(g, c, fmt, aged, is_open, load)
        frags.setdefault(c.id, {})[key] = frag
    return frag


def encoded_fragment(g: Graph, c: Call, fmt: str) -> Piece | None:
    """`_fragment` of a user or llm node from its stored line, when the common shape allows (text
    output, no memory prefetch, no status note, no inner-call input): texts as orjson.Fragment.
    Not cached: slicing the line again is as cheap as a lookup, and the message memo keeps them."""
    raw = c.stored_line()
    if raw is None:
        return None
    s = stored.spans(raw)
    if s is None:
        return None
    start, end, meta = s
    if c.role == "user":
        if end - start > 2 and raw.find(b'memory_prefetch"', meta) < 0:
            return ("msgs", [_text_msg(fmt, "user", Fragment(raw[start:end]))])
        return None
    if c.role != "llm" or c.status in ("error", "cancelled") or is_summary(c):
        return None
    return ("llm", [], Fragment(raw[start:end]) if end - start > 2 else None)


def _user_msg(fmt: str, parts: list[dict[str, Any]], load: Load) -> Message | None:
    if not parts:
        return None
    blocks = wire_parts(parts, fmt, load)
    if fmt == "openai" and len(blocks) == 1 and blocks[0]["type"] == "text":
        return {"role": "user", "content": blocks[0]["text"]}
    return {"role": "user", "content": blocks}


def _text_msg(fmt: str, role: str, text: str | Fragment) -> Message:
    return {"role": role, "content": text if fmt == "openai" else [{"type": "text", "text": text}]}


def _status_note(c: Call) -> str | None:
    if c.status == "error":
        err = c.metadata.get("error")
        if isinstance(err, dict):
            return f"[error: {err.get('type', 'Error')}: {err.get('message', '')}]"
        return "[error]"
    if c.status == "cancelled":
        return "[cancelled]"
    return None


def _plain(value: object) -> str:
    return value if type(value) is str else text_of(parts_of(value))


def _result_text(c: Call, aged: int) -> str:
    text = _plain(c.output)
    note = _status_note(c) if c.status != "completed" else None
    if note:
        text = f"{note}\n{text}" if text else note
    elif c.status == "running" and not text:
        text = "[no result yet: still running]"
    return age_text(text, aged) if aged >= 0 else text


def _call_text(c: Call) -> str:
    args = "" if c.input is None else canonical_json(c.input)
    return f"Called {c.name}({args})"


def _fragment(g: Graph, c: Call, fmt: str, aged: int, is_open: bool, load: Load) -> Piece:
    if c.role == "user":
        pre = c.metadata.get("memory_prefetch")
        if type(c.output) is str and c.output and not pre:  # the common case, without the detours
            return ("msgs", [_text_msg(fmt, "user", c.output)])
        parts = parts_of(c.output)
        if pre:
            mem = text_of(parts_of(pre))
            parts = [{"type": "text", "text": f"<memory>\n{mem}\n</memory>"}] + parts
        msg = _user_msg(fmt, parts, load)
        return ("msgs", [msg] if msg else [])
    if c.role == "llm":
        if is_summary(c):
            text = _plain(c.output)
            return ("msgs", [_text_msg(fmt, "user", f"Summary of the earlier conversation:\n{text}")])
        before: list[Message] = []
        caller = g.nodes.get(c.caller)
        if caller is not None and caller.role == "code" and c.input is not None:
            msg = _user_msg(fmt, parts_of(c.input), load)
            if msg:
                before.append(msg)
        if type(c.output) is str:
            text = c.output
        else:
            parts = parts_of(c.output)
            if any(p["type"] != "text" for p in parts):
                raise RenderError("an llm reply cannot carry attachments", c.id)
            text = "\n".join(p["text"] for p in parts)
        note = _status_note(c) if c.status != "completed" else None
        if note:
            text = f"{text}\n{note}" if text else note
        return ("llm", before, text or None)
    # code
    if is_open:
        return ("msgs", [_text_msg(fmt, "assistant", _call_text(c))])
    if is_tool_call(g, c):
        tcid = str(c.metadata["tool_call_id"])
        result = _result_text(c, aged)
        if fmt == "openai":
            args = "{}" if c.input is None else canonical_json(c.input)
            call: Message = {"id": tcid, "type": "function",
                             "function": {"name": function_name_of(c.name), "arguments": args}}
            res: Message = {"role": "tool", "tool_call_id": tcid, "content": result}
        else:
            inp = c.input if isinstance(c.input, dict) else ({} if c.input is None else {"input": c.input})
            call = {"type": "tool_use", "id": tcid, "name": function_name_of(c.name), "input": inp}
            res = {"type": "tool_result", "tool_use_id": tcid, "content": result}
            if c.status == "error":
                res["is_error"] = True
        return ("tool", call, res)
    return ("msgs", [_text_msg(fmt, "assistant", _call_text(c)),
                     _text_msg(fmt, "user", f"{c.name} returned:\n{_result_text(c, aged)}")])
