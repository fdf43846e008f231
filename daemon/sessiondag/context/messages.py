"""render_dag_messages: a RenderedContext → provider wire messages. Deterministic for the same input.

Formats
- "openai" (chat completions): {"role": "system"|"user"|"assistant"|"tool", …}; an llm node's
  tool calls are `tool_calls` on its assistant message, each answered by a following "tool" message.
- "anthropic" (messages API): content is always a list of blocks; tool calls are `tool_use` blocks,
  results are `tool_result` blocks in the next user message; consecutive same-role messages are
  merged. The system prompt comes as a leading {"role": "system", "content": str} item — pop it into
  the API's `system` parameter (`split_system`).

What each node renders to: context/fragments.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Protocol, overload

from orjson import dumps, loads

from ..core.model import Call
from ..store.session import Session
from . import stored
from .aging import Manifest
from .cache import RenderCache
from .encoded_messages import EncodedMessages, Message
from .fragments import Load, cached_fragment, encoded_fragment
from .graphinfo import RenderError, is_tool_call
from . import prefix
from .render import RenderedContext, render_context
from .synced_manifest import localized, recorded_localized

FORMATS = ("openai", "anthropic")



class Many(Protocol):   # renders nodes (seq order) as messages, a memo kind's: dicts or their bytes
    def __call__(self, nodes: Sequence[Call], open_ids: frozenset[str] = ..., /) -> list[Any]: ...


def render_messages(session: Session, head_id: str | None = None, *, frame: str | None = None,
                    format: str = "openai", manifest: Manifest | None = None,
                    encoded: bool = False, fast: bool = True) -> tuple[list[Message], Manifest]:
    """render_context + render_dag_messages in one call: (wire messages, manifest to record).
    `encoded=True`: the messages are only to be encoded by orjson (see render_dag_messages).
    `fast=False`: the reference path (context/renderer.py): every body decoded, no prefix memo.
    A `manifest` recorded on another machine is put into this session's seqs (recorded_localized)."""
    manifest = recorded_localized(session, manifest)
    rendered = render_context(session, head_id, frame=frame, manifest=manifest, fast=fast,
                              encode=fast and format == "openai" and not encoded)
    return render_dag_messages(rendered, format, session=session, encoded=encoded and fast), rendered.manifest


def render_bytes(session: Session, head_id: str | None = None, *, frame: str | None = None,
                 format: str = "openai", manifest: Manifest | None = None) -> tuple[list[bytes], Manifest]:
    """render_messages with each message as its JSON encoding (render_dag_bytes): what the
    daemon's session/render sends."""
    manifest = recorded_localized(session, manifest)
    rendered = render_context(session, head_id, frame=frame, manifest=manifest, encode=format == "openai",
                              fast=True)
    return render_dag_bytes(rendered, format, session=session), rendered.manifest


def replay_messages(session: Session, node_id: str, *, format: str = "openai") -> list[Message]:
    """Re-render the context of a past llm call from its `metadata.render_manifest` (on the fast
    path unless the session's `rendering.fast_render` is off: context/renderer.py)."""
    node = session.get_node(node_id)
    m = node.metadata.get("render_manifest")
    if not isinstance(m, dict) or "head_id" not in m:
        raise RenderError("the node has no complete render_manifest (with head_id) to replay", node_id)
    m = localized(session, node, m)   # recorded on another machine: into this session's seqs
    fast = session.settings().fast_render
    rendered = render_context(session, m["head_id"], frame=m.get("frame"), manifest=m,
                              encode=fast and format == "openai", fast=fast)
    return with_call_extras(render_dag_messages(rendered, format, session=session), m, format)


@overload
def with_instructions(messages: list[Message], block: str | None) -> list[Message]: ...
@overload
def with_instructions(messages: EncodedMessages, block: str | None) -> EncodedMessages: ...
@overload
def with_instructions(messages: list[Message] | EncodedMessages, block: str | None) -> list[Message] | EncodedMessages: ...
def with_instructions(messages: list[Message] | EncodedMessages, block: str | None) -> list[Message] | EncodedMessages:
    """The active functions' instructions as one system message right after the leading system
    message(s) (a list of dicts or EncodedMessages, a new one of the same kind). The runtime sends
    exactly this; a replay rebuilds it from the manifest."""
    if not block:
        return messages
    if isinstance(messages, EncodedMessages):
        return messages.inserted(messages.leading_system(), {"role": "system", "content": block})
    i = 0
    while i < len(messages) and messages[i].get("role") == "system":
        i += 1
    return messages[:i] + [{"role": "system", "content": block}] + messages[i:]


def with_call_extras(messages: list[Message], manifest: Manifest, format: str = "openai") -> list[Message]:
    """What a model call added to its render, as its manifest records it: `instructions` (the
    injected block of the active agentic functions' docstrings) and `prompt` (the in-function
    prompt appended as the last user message)."""
    out = with_instructions(list(messages), manifest.get("instructions"))
    prompt = manifest.get("prompt")
    if prompt is not None:
        content = prompt if format == "openai" or not isinstance(prompt, str) else [{"type": "text", "text": prompt}]
        out.append({"role": "user", "content": content})
    return out


def split_system(messages: list[Message]) -> tuple[str | None, list[Message]]:
    """(system text, the rest) — for the Anthropic API's separate `system` parameter."""
    if messages and messages[0].get("role") == "system":
        return messages[0]["content"], messages[1:]
    return None, messages


def render_dag_messages(rendered: RenderedContext, format: str = "openai", *,
                        session: Session | None = None, encoded: bool = False) -> list[Message]:
    """The wire messages for `rendered`. The message dicts may be shared with the render cache:
    treat them as read-only (copy before changing one).

    `encoded=True` (a reply to encode): the text of a node whose body is still its stored line
    comes as an `orjson.Fragment` sliced from that line instead of a decoded str (context/stored.py)
    — orjson encodes such messages to exactly the bytes of the plain ones, without decoding a body
    or re-encoding its text."""
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; expected one of {FORMATS}")
    cache, load, m, head = _setup(rendered, session)

    def many(nodes: Sequence[Call], open_ids: frozenset[str] = frozenset()) -> list[Message]:
        return emit(cache, nodes, format, m, open_ids, load, encoded)

    def one(c: Call) -> list[Message] | Message:
        return emit_one(cache, c, format, load, encoded)
    run: Callable[[list[Call], int], list[Message | None]] | None = None
    if format == "openai" and not encoded and rendered._memo is not None:
        # plain dicts from the stored lines: a node that renders as one plain text message gets it
        # by decoding that message's bytes (stored.openai_messages, equal to dumps of the plain
        # message), not by decoding its whole body and building the message
        noted = rendered._memo[0].noted

        def run(nodes: list[Call], i: int) -> list[Message | None]:
            got = stored.openai_messages(nodes, noted.window(i, len(nodes)) if noted is not None else None)
            return [None if b is None else loads(b) for b in got]

        def one(c: Call) -> list[Message] | Message:
            b = stored.openai_messages([c])[0]
            if b is None:
                return emit_one(cache, c, format, load)
            msg: Message = loads(b)
            return msg
    out = _memoized(rendered, format, session, format + "+encoded" if encoded else format, head, many, one, run)
    if out is not None:
        return out
    out = many(rendered.nodes, rendered.open_ids)
    return head + (out if format == "openai" else prefix.merge_same_role(out))


def render_dag_bytes(rendered: RenderedContext, format: str = "openai", *,
                     session: Session | None = None) -> list[bytes]:
    """`render_dag_messages` with each message as its JSON encoding: `b"[" + b",".join(result) +
    b"]"` is exactly `orjson.dumps` of the plain messages. What session/render sends (spliced into
    the reply as a codec.RawArray). For "openai", a node that renders as one plain text message
    from its stored line is encoded without building the message (`stored.openai_messages`), and
    the prefix memo keeps the encoded messages, so a warm render encodes nothing again; Anthropic
    messages are merged by role, so they are built (`encoded=True`) and encoded one by one."""
    if format != "openai":
        return [dumps(x) for x in render_dag_messages(rendered, format, session=session, encoded=True)]
    cache, load, m, plain_head = _setup(rendered, session)
    head = [dumps(x) for x in plain_head]

    def many(nodes: Sequence[Call], open_ids: frozenset[str] = frozenset()) -> list[bytes]:
        return [dumps(x) for x in emit(cache, nodes, format, m, open_ids, load, True)]
    noted = rendered._memo[0].noted if rendered._memo is not None else None  # messages the memo's extension noted

    def run(nodes: list[Call], i: int) -> list[bytes | None]:  # None: that node renders through `many`
        return stored.openai_messages(nodes, noted.window(i, len(nodes)) if noted is not None else None)

    def one(c: Call) -> bytes | None:
        return stored.openai_messages([c])[0]
    out = _memoized(rendered, format, session, "openai+bytes", head, many, one, run)
    return out if out is not None else head + many(rendered.nodes, rendered.open_ids)


def _setup(rendered: RenderedContext,
           session: Session | None) -> tuple[RenderCache, Load, Manifest, list[Message]]:
    cache = rendered._cache
    if cache is None:
        raise RenderError("render_dag_messages needs a RenderedContext made by render_context")
    load = session.load_blob if session is not None else None
    head: list[Message] = [{"role": "system", "content": rendered.system_prompt}] if rendered.system_prompt is not None else []
    return cache, load, rendered.manifest, head


def _memoized(rendered: RenderedContext, format: str, session: Session | None, key: str, head: list[Any],
              many: Many, one: Callable[[Call], object],
              run: Callable[[list[Call], int], Sequence[object]] | None = None) -> list[Any] | None:
    """The messages from the prefix memo (kept under `key`), or None when the render has no memo or
    it changed since (then the caller renders `rendered.nodes` plainly)."""
    memo = rendered._memo
    if memo is None:
        return None
    cache, m = rendered._cache, rendered.manifest
    if cache is None:   # a RenderedContext with a memo has its cache
        return None
    # lock order everywhere: session lock (blob loads take it), then cache lock
    with (session.lock if session is not None else nullcontext()), cache.lock:
        if memo[0].generation != memo[1]:
            return None
        nm, positions, rest = memo[0], memo[2], memo[3]
        out = prefix.memo_messages(nm, format, m["aged_before_seq"], m["max_result_chars"], many, head,
                                   positions, key, one, run)
        if rest:
            tail = many(rest, rendered.open_ids)
            if format != "openai":
                tail = prefix.merge_same_role(tail)
                if out and tail and out[-1]["role"] == tail[0]["role"] and out[-1]["role"] != "system":
                    out[-1] = {"role": out[-1]["role"],
                               "content": list(out[-1]["content"]) + list(tail[0]["content"])}
                    tail = tail[1:]
            out.extend(tail)
        return out


def emit(cache: RenderCache, nodes: Sequence[Call], fmt: str, m: Manifest, open_ids: frozenset[str],
         load: Load, encoded: bool = False) -> list[Message]:
    """Messages for `nodes` (seq order), tool calls grouped into their owner's assistant message.
    Anthropic same-role neighbours are not merged here (see merge_same_role)."""
    g = cache.graph
    aged_before, max_chars = m["aged_before_seq"], m["max_result_chars"]
    frags = cache.fragments
    oa = fmt == "openai"

    tools: dict[str, list[Call]] = {}
    admitted = None
    for c in nodes:
        if c.role == "code" and c.id not in open_ids and is_tool_call(g, c):
            if admitted is None:
                admitted = {x.id for x in nodes}
            if c.caller not in admitted:
                raise RenderError("a tool-call node is rendered without its owning llm node", c.id)
            tools.setdefault(c.caller, []).append(c)

    out: list[Message] = []
    for c in nodes:
        if encoded and c.role != "code":
            frag = encoded_fragment(g, c, fmt) or cached_fragment(frags, g, c, fmt, -1, False, load)
        else:
            aged = max_chars if (c.role == "code" and c.seq < aged_before) else -1
            frag = cached_fragment(frags, g, c, fmt, aged, c.id in open_ids, load)
        kind = frag[0]
        if kind == "msgs":
            out.extend(frag[1])
        elif kind == "llm":
            _, pre, text = frag
            out.extend(pre)
            calls = tools.get(c.id)
            if calls:
                tfrags = [cached_fragment(frags, g, t, fmt, max_chars if t.seq < aged_before else -1, False, load)
                          for t in calls]
                if oa:
                    out.append({"role": "assistant", "content": text,
                                "tool_calls": [tf[1] for tf in tfrags]})
                    out.extend(tf[2] for tf in tfrags)
                else:
                    blocks = ([{"type": "text", "text": text}] if text else []) + [tf[1] for tf in tfrags]
                    out.append({"role": "assistant", "content": blocks})
                    out.append({"role": "user", "content": [tf[2] for tf in tfrags]})
            elif text:
                out.append({"role": "assistant", "content": text if oa else [{"type": "text", "text": text}]})
        # kind == "tool": emitted with its owner
    return out


def emit_one(cache: RenderCache, c: Call, fmt: str, load: Load, encoded: bool = False) -> list[Message]:
    """`emit(cache, [c], …)` for a node that is not a code node (no aging, no tool calls)."""
    frag = ((encoded_fragment(cache.graph, c, fmt) if encoded else None)
            or cached_fragment(cache.fragments, cache.graph, c, fmt, -1, False, load))
    if frag[0] == "msgs":
        msgs: list[Message] = frag[1]
        return msgs
    pre: list[Message]
    _, pre, text = frag
    if text:
        return pre + [{"role": "assistant", "content": text if fmt == "openai" else [{"type": "text", "text": text}]}]
    return pre
