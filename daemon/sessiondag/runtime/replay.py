"""Counterfactual replay of one recorded model call (docs/replay.md).

`replay_call` re-sends the exact messages a past llm node's render manifest rebuilds (rendered in
the replaying provider's wire format), with the overrides applied — the system prompt replaced,
messages edited by index — and the tool specs the original request carried. The answer is recorded
as a new llm node beside the original: same caller, same predecessor (so inside a sub-agent or a
function it is in the same frame), `metadata.replay_of` = the original, `metadata.replay` = the
overrides. On a chat chain the new node is the tip of a new branch, named; the session's HEAD
stays where it was. No tool runs: the tool calls the model asks for are recorded on the node
(`metadata.tool_calls`). The replay is one committed turn, its records one group commit written
after the call (no running node before it: one fdatasync, not three).

A manifest this build cannot re-render exactly (another render policy version, fields missing) is
refused with `replay_refused` before anything is sent.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from ..context.aging import ManifestError, check_manifest
from ..context.encoded_messages import Message
from ..context.synced_manifest import localized
from ..context.messages import replay_messages
from ..core.errors import ReplayRefusedError
from ..core.model import MODEL_KEY, Call, error_metadata
from ..core.text import encodable
from ..core.usage import TOOLS_KEY
from .budget import record_spend
from .providers.base import complete_of
from .calls import budget_checked, call_metadata, clean_completion, usage_metadata
from .errors import RunCancelled
from .context import SessionWriter
from .runtime_api import RuntimeApi
from .turns import turn_lock

if TYPE_CHECKING:
    from ..store.session import Session
    from .calls import Messages

REPLAY_KEY = "replay"
REPLAY_OF = "replay_of"


class Edit(TypedDict):
    """One message of the rendered request replaced: its index and new content."""
    message_index: int
    content: object


@dataclass
class Overrides:
    """What a replay changes (None / empty: as recorded). provider/model/temperature/max_tokens
    are the replaying Runtime's provider; they are recorded here for the node's metadata."""

    system: str | None = None
    edits: list[Edit] = field(default_factory=list)
    provider: str | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None

    def to_dict(self) -> dict[str, object]:
        fields = (("system", self.system), ("provider", self.provider), ("model", self.model),
                  ("temperature", self.temperature), ("max_tokens", self.max_tokens))
        out: dict[str, object] = {k: v for k, v in fields if v is not None}
        if self.edits:
            out["edits"] = list(self.edits)
        return out


def replayable(session: Session, node_id: str) -> tuple[Call, dict[str, Any]]:
    """(the node, its manifest), or ReplayRefusedError."""
    node = session.get_node(node_id)
    if node.role != "llm":
        raise ReplayRefusedError(node_id, "not_a_model_call", f"it is a {node.role} node, not a model call")
    m = node.metadata.get("render_manifest")
    if not isinstance(m, dict) or "head_id" not in m:
        raise ReplayRefusedError(node_id, "no_manifest", "it has no render manifest (with head_id) to rebuild "
                                 "its messages from")
    try:
        check_manifest(localized(session, node, m))   # one recorded elsewhere, in this session's seqs
    except ManifestError as e:
        reason = "policy_version" if "policy_version" in str(e) else "bad_manifest"
        raise ReplayRefusedError(node_id, reason, str(e)) from None
    return node, m


def apply_overrides(node_id: str, messages: list[Message], ov: Overrides) -> list[Message]:
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


def tool_specs(rt: RuntimeApi, node: Call) -> list[dict[str, Any]]:
    """The specs the original request carried, by the names it recorded (older nodes recorded none:
    a chat-chain call had the runtime's whole list, a call inside a function none)."""
    specs = [t.spec() for t in getattr(rt, "tools", ())]
    names = node.metadata.get(TOOLS_KEY)
    if isinstance(names, list):
        return [s for s in specs if s["function"]["name"] in names]
    return specs if node.predecessor is not None else []


def request_for(w: SessionWriter, rt: RuntimeApi, node_id: str, ov: Overrides) -> tuple[Call, dict[str, Any], Messages,
                                                                                  list[dict[str, Any]]]:
    """(original node, its manifest, the messages to send, the tool specs) — nothing written."""
    fmt = getattr(rt.provider, "wire_format", "openai")
    with w.lock:
        node, manifest = replayable(w.session, node_id)
        messages = apply_overrides(node_id, replay_messages(w.session, node_id, format=fmt), ov)
    return node, manifest, messages, tool_specs(rt, node)


def replay_call(w: SessionWriter, rt: RuntimeApi, node_id: str, ov: Overrides | None = None,
                name: str | None = None) -> dict[str, Any]:
    """Replay `node_id` with `rt`'s provider; returns {node, branch, tool_calls, messages}."""
    ov = ov or Overrides()
    with turn_lock(w):  # HEAD is put back after: no turn may move it meanwhile
        return _replay(w, rt, node_id, ov, name)


def _replay(w: SessionWriter, rt: RuntimeApi, node_id: str, ov: Overrides, name: str | None) -> dict[str, Any]:
    """The call, then everything it records in one group commit (one fdatasync): the new node, its
    tool calls, the branch name, HEAD put back. No running node is written before the call (a replay
    cut short by a crash leaves nothing: it can simply run again), which keeps the journal's cost
    off the provider's (docs/replay.md "Overhead")."""
    node, manifest, messages, tools = request_for(w, rt, node_id, ov)
    with w.lock:
        head_before = w.session.head_id
    rt.check_cancelled()
    extra = {REPLAY_OF: node_id, REPLAY_KEY: ov.to_dict(), "replayed_model": node.metadata.get(MODEL_KEY)}
    md = call_metadata(rt, tools, {**manifest, REPLAY_KEY: ov.to_dict()}, extra=extra)
    where = {"input": node.input, "caller": node.caller, "predecessor": node.predecessor}
    try:
        prices = budget_checked(w, rt, messages, md, **where)
    except BaseException as e:
        _settle(w, head_before, getattr(e, "sessiondag_node_id", None), name, node_id)
        raise
    parts: list[str] = []
    model = rt.provider.model
    t0 = time.perf_counter()
    try:
        comp = clean_completion(complete_of(rt.provider)(messages, tools, on_text=lambda d: parts.append(encodable(d)),
                                                        cancelled=rt.cancelled))
    except BaseException as e:
        cancelled = isinstance(e, RunCancelled)
        failed = Call("llm", model, output="".join(parts) or encodable(str(getattr(e, "partial", "") or "")),
                      status="cancelled" if cancelled else "error",
                      metadata={**md, **({} if cancelled else {"error": error_metadata(e, traceback.format_exc())})},
                      **where)
        _settle(w, head_before, failed, name, node_id)
        try:
            setattr(e, "sessiondag_node_id", failed.id)  # as calls._tag does
        except AttributeError:
            pass
        raise
    calls = [{"id": tc.id, "name": tc.name, "arguments": tc.arguments} for tc in comp.tool_calls]
    usage = usage_metadata(comp, rt.provider.name, model, prices, time.perf_counter() - t0)
    asked = {"tool_calls": calls, "tools_run": False} if calls else {}
    new = Call("llm", model, output=comp.text, status="completed", metadata={**md, **usage, **asked}, **where)
    branch = _settle(w, head_before, new, name, node_id)
    done = w.get_node(new.id)
    rt.emit("node_appended", session_id=w.session_id, node=done.to_dict())
    record_spend(rt, done)
    return {"node": done, "branch": branch, "tool_calls": calls, "messages": messages, "text": comp.text}


def _settle(w: SessionWriter, head_before: str, new: Call | str | None, name: str | None,
            node_id: str) -> str | None:
    """Append the new node (a Call; an id: one already written), name the new branch, put HEAD
    back — one group fdatasync — then commit. Returns the branch name (None off a chat chain)."""
    branch = None
    s = w.session
    with s.batched():
        if isinstance(new, Call):
            new = s.append(new).id
        if new is not None:
            c = s.graph.get(new)
            if c.predecessor is not None:
                branch = name or f"replay-{new[:8]}"
                s.name_branch(new, branch)
        if s.head_id != head_before:
            s.checkout(head_before)
    s.commit_turn(f"replay of {node_id}")
    return branch
