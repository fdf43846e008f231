"""Counterfactual replay of one recorded model call (docs/replay.md).

`replay_call` re-sends the exact messages a past llm node's render manifest rebuilds (rendered in
the replaying provider's wire format), with the overrides applied — the system prompt replaced,
messages edited by index — and the tool specs the original request carried. The answer is recorded
as a new llm node beside the original: same caller, same predecessor (so inside a sub-agent or a
function it is in the same frame), `metadata.replay_of` = the original, `metadata.replay` = the
overrides. On a chat chain the new node is the tip of a new branch, named; the session's HEAD
stays where it was. No tool runs: the tool calls the model asks for are recorded on the node
(`metadata.tool_calls`). The replay is one committed turn.

A manifest this build cannot re-render exactly (another render policy version, fields missing) is
refused with `replay_refused` before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..context.aging import ManifestError, check_manifest
from ..context.messages import replay_messages
from ..core.errors import ReplayRefusedError
from ..core.model import MODEL_KEY, Call
from ..core.usage import TOOLS_KEY
from .calls import model_call
from .context import SessionWriter
from .turns import turn_lock

REPLAY_KEY = "replay"
REPLAY_OF = "replay_of"


@dataclass
class Overrides:
    """What a replay changes (None / empty: as recorded). provider/model/temperature/max_tokens
    are the replaying Runtime's provider; they are recorded here for the node's metadata."""

    system: str | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)   # [{message_index, content}]
    provider: str | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in (("system", self.system), ("provider", self.provider), ("model", self.model),
                                 ("temperature", self.temperature), ("max_tokens", self.max_tokens)) if v is not None}
        if self.edits:
            out["edits"] = list(self.edits)
        return out


def replayable(session: Any, node_id: str) -> tuple[Call, dict[str, Any]]:
    """(the node, its manifest), or ReplayRefusedError."""
    node = session.get_node(node_id)
    if node.role != "llm":
        raise ReplayRefusedError(node_id, "not_a_model_call", f"it is a {node.role} node, not a model call")
    m = node.metadata.get("render_manifest")
    if not isinstance(m, dict) or "head_id" not in m:
        raise ReplayRefusedError(node_id, "no_manifest", "it has no render manifest (with head_id) to rebuild "
                                 "its messages from")
    try:
        check_manifest(m)
    except ManifestError as e:
        reason = "policy_version" if "policy_version" in str(e) else "bad_manifest"
        raise ReplayRefusedError(node_id, reason, str(e)) from None
    return node, m


def apply_overrides(node_id: str, messages: list[dict[str, Any]], ov: Overrides) -> list[dict[str, Any]]:
    """The messages with the system prompt replaced and the edits applied (new dicts for the changed
    messages: the rendered ones may be shared with the render cache)."""
    out = list(messages)
    if ov.system is not None:
        if out and out[0].get("role") == "system":
            out[0] = {**out[0], "content": ov.system}
        else:
            out.insert(0, {"role": "system", "content": ov.system})
    for e in ov.edits:
        i = e.get("message_index")
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(out):
            raise ReplayRefusedError(node_id, "bad_edit", f"edit of message {i!r}: the request has messages "
                                     f"0..{len(out) - 1}")
        out[i] = {**out[i], "content": e.get("content")}
    return out


def tool_specs(rt: Any, node: Call) -> list[dict[str, Any]]:
    """The specs the original request carried, by the names it recorded (older nodes recorded none:
    a chat-chain call had the runtime's whole list, a call inside a function none)."""
    specs = [t.spec() for t in getattr(rt, "tools", ())]
    names = node.metadata.get(TOOLS_KEY)
    if isinstance(names, list):
        return [s for s in specs if s["function"]["name"] in names]
    return specs if node.predecessor is not None else []


def request_for(w: SessionWriter, rt: Any, node_id: str, ov: Overrides) -> tuple[Call, dict, list, list]:
    """(original node, its manifest, the messages to send, the tool specs) — nothing written."""
    fmt = getattr(rt.provider, "wire_format", "openai")
    with w.lock:
        node, manifest = replayable(w.session, node_id)
        messages = apply_overrides(node_id, replay_messages(w.session, node_id, format=fmt), ov)
    return node, manifest, messages, tool_specs(rt, node)


def replay_call(w: SessionWriter, rt: Any, node_id: str, ov: Overrides | None = None,
                name: str | None = None) -> dict[str, Any]:
    """Replay `node_id` with `rt`'s provider; returns {node, branch, tool_calls, messages}."""
    ov = ov or Overrides()
    with turn_lock(w):  # HEAD is put back after: no turn may move it meanwhile
        return _replay(w, rt, node_id, ov, name)


def _replay(w: SessionWriter, rt: Any, node_id: str, ov: Overrides, name: str | None) -> dict[str, Any]:
    node, manifest, messages, tools = request_for(w, rt, node_id, ov)
    with w.lock:
        head_before = w.session.head_id
    extra = {REPLAY_OF: node_id, REPLAY_KEY: ov.to_dict(), "replayed_model": node.metadata.get(MODEL_KEY)}
    try:
        new, comp = model_call(w, rt, messages, tools, caller=node.caller, predecessor=node.predecessor,
                               input=node.input, manifest={**manifest, REPLAY_KEY: ov.to_dict()}, extra=extra)
    except BaseException as e:
        failed = getattr(e, "sessiondag_node_id", None)
        _settle(w, head_before, failed, name, node_id)
        raise
    calls = [{"id": tc.id, "name": tc.name, "arguments": tc.arguments} for tc in comp.tool_calls]
    branch = _settle(w, head_before, new.id, name, node_id, calls)
    return {"node": w.get_node(new.id), "branch": branch, "tool_calls": calls, "messages": messages,
            "text": comp.text}


def _settle(w: SessionWriter, head_before: str, new_id: str | None, name: str | None, node_id: str,
            calls: list[dict[str, Any]] | None = None) -> str | None:
    """Record the tool calls asked for, name the new branch, put HEAD back (one group fdatasync),
    commit. Returns the branch name (None off a chat chain)."""
    branch = None
    s = w.session
    with s.batched():
        if calls:
            s.update(new_id, metadata={"tool_calls": calls, "tools_run": False})
        if new_id is not None:
            c = s.graph.get(new_id)
            if c.predecessor is not None:
                branch = name or f"replay-{new_id[:8]}"
                s.name_branch(new_id, branch)
        if s.head_id != head_before:
            s.checkout(head_before)
    s.commit_turn(f"replay of {node_id}")
    return branch
