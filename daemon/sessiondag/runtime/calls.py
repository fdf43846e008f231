"""Model calls: render the context at a chain position, inject the active functions' docstrings,
stream the provider into a recorded llm node. Used by `Runtime.exec` (runtime.py) and the agent loop
(loop.py). `rt` is the Runtime (provider, handlers, events, cancellation), passed in by the caller.
"""

from __future__ import annotations

import inspect
import time
import traceback
from typing import Any, Mapping, Unpack

from ..context.aging import Manifest, current_manifest
from ..context.encoded_messages import EncodedMessages, Message, plain_messages
from ..context.messages import with_instructions
from ..context.renderer import renderer_for
from ..core.text import encodable, encodable_value
from ..core.model import MODEL_KEY, USAGE_INPUT, USAGE_OUTPUT, Call, error_metadata
from ..core.prices import Price, price_table
from ..core.usage import (COST_KEY, LATENCY_KEY, RESPONSE_MODEL, TOOLS_KEY, USAGE_CACHED, USAGE_REASONING,
                          cost_record)
from .budget import BudgetExceededError, check_budget, record_spend
from .context import Frame, SessionWriter, current_runtime
from .errors import RunCancelled
from .providers import Completion
from .providers.base import complete_of, streams_reasoning
from .providers.retry import on_retry
from .runtime_api import RuntimeApi
from .writer import NodeUpdate


Messages = list[Message] | EncodedMessages
REASONING_KEY = "reasoning"   # llm node metadata: the reasoning the model streamed (docs/runtime.md)


def render(w: SessionWriter, head_id: str, frame: str | None) -> tuple[Messages, dict[str, Any]]:
    """Render the wire messages for a call at `head_id` (frame: the current function node). In the
    "openai" format as EncodedMessages (each message's JSON, as session/render sends it): a provider
    that sends JSON splices them into its request; `model_call` decodes them for any other."""
    fmt = getattr(getattr(current_runtime(), "provider", None), "wire_format", "openai")  # the provider's format
    r = renderer_for(w.session)
    with w.lock:
        if fmt == "openai":
            encoded, manifest = r.encoded(w.session, head_id, frame=frame, format=fmt)
            messages: Messages = EncodedMessages(encoded)
        else:
            plain, manifest = r.messages(w.session, head_id, frame=frame, format=fmt)
            messages = list(plain)
        if not isinstance(manifest, dict):
            manifest = current_manifest(w.session)
    return messages, manifest


def instructions_of(frames: tuple[Frame, ...]) -> list[tuple[str, str]]:
    return [(f.name, inspect.cleandoc(f.doc)) for f in frames if f.doc and f.doc.strip()]


def instructions_block(frames: tuple[Frame, ...]) -> str | None:
    docs = instructions_of(frames)
    if not docs:
        return None
    return "\n\n".join(f"Instructions of `{name}`:\n{doc}" for name, doc in docs)


def inject_instructions(messages: Messages, frames: tuple[Frame, ...]) -> Messages:
    """Insert the active functions' docstrings, outermost first, right after the system prompt.
    (model_call records the same block in the manifest, so a replay rebuilds these bytes.)"""
    out: Messages = with_instructions(messages, instructions_block(frames))  # the same kind back
    return out


def call_metadata(rt: RuntimeApi, tools: list[dict[str, Any]], manifest: Manifest | None,
                  frames: tuple[Frame, ...] = (), extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The metadata an llm node records before its call: model, provider, the render manifest (with
    the instructions block the callers injected), the request options, which tool specs were sent."""
    model = rt.provider.model
    manifest = dict(manifest or {})
    block = instructions_block(frames)
    if block is not None:  # what the callers injected (inject_instructions with these frames)
        manifest["instructions"] = block
    md: dict[str, Any] = {MODEL_KEY: model, "render_manifest": manifest, "provider": rt.provider.name}
    md.update(getattr(rt.provider, "request_metadata", dict)())  # temperature, max tokens
    md[TOOLS_KEY] = [t.get("function", t).get("name") for t in tools]  # which specs were sent (replay)
    md.update(extra or {})
    if block is not None:
        md["instructions_from"] = [name for name, _ in instructions_of(frames)]
    return md


def budget_checked(w: SessionWriter, rt: RuntimeApi, messages: Messages, md: dict[str, Any], *,
                   caller: str, predecessor: str | None, input: Any = None) -> Mapping[str, Price]:
    """The price table, once the projected spend passed the budget check; over budget: a committed
    error node and BudgetExceededError (tagged with it)."""
    settings = w.session.settings()
    prices = price_table(settings.prices)
    try:
        check_budget(w, rt, messages, prices, settings)
    except BudgetExceededError as e:  # the turn ends here, on a committed error node
        node = w.append(Call("llm", rt.provider.model, input=input, caller=caller, predecessor=predecessor,
                             status="error", metadata={**md, "error": {**error_metadata(e, ""), **e.data()}}))
        rt.emit("node_appended", session_id=w.session_id, node=node.to_dict())
        _tag(e, node.id)
        raise
    return prices


def model_call(w: SessionWriter, rt: RuntimeApi, messages: Messages, tools: list[dict[str, Any]], *,
               caller: str, predecessor: str | None, input: Any = None, manifest: Manifest | None = None,
               frames: tuple[Frame, ...] = (), extra: dict[str, Any] | None = None) -> tuple[Call, Completion]:
    """Record a running llm node, stream the provider into it, finalize it. The partial transcript is
    persisted (status error/cancelled) before any mid-stream exception propagates. `extra`: more
    metadata for the node (a replay's `replay_of`)."""
    rt.check_cancelled()
    model = rt.provider.model
    md = call_metadata(rt, tools, manifest, frames, extra)
    prices = budget_checked(w, rt, messages, md, caller=caller, predecessor=predecessor, input=input)
    node = w.append(Call("llm", model, input=input, caller=caller, predecessor=predecessor,
                         status="running", metadata=md))
    rt.emit("node_appended", session_id=w.session_id, node=node.to_dict())
    parts: list[str] = []

    def on_text(delta: str) -> None:
        delta = encodable(delta)        # a hostile server's lone surrogates would poison the node
        parts.append(delta)
        rt.emit("text_delta", session_id=w.session_id, node_id=node.id, delta=delta)

    thoughts: list[str] = []

    def on_reasoning(delta: str) -> None:
        delta = encodable(delta)
        thoughts.append(delta)
        rt.emit("reasoning_delta", session_id=w.session_id, node_id=node.id, delta=delta)

    def announce(attempt: int, delay: float, reason: str) -> None:
        rt.emit("retry", session_id=w.session_id, node_id=node.id, attempt=attempt, delay=delay, reason=reason)
    token = on_retry.set(announce)
    t0 = time.perf_counter()
    try:
        more = {"on_reasoning": on_reasoning} if streams_reasoning(rt.provider) else {}
        sent = messages if getattr(rt.provider, "encoded_messages", False) else plain_messages(messages)
        comp = clean_completion(complete_of(rt.provider)(sent, tools, on_text=on_text, cancelled=rt.cancelled, **more))
    except RunCancelled as e:
        _tag(e, node.id)
        finish(w, rt, node.id, output="".join(parts), status="cancelled")
        raise
    except BaseException as e:
        _tag(e, node.id)
        finish(w, rt, node.id, output="".join(parts) or getattr(e, "partial", ""), status="error",
               metadata={"error": error_metadata(e, traceback.format_exc())})
        raise
    finally:
        on_retry.reset(token)
    md = usage_metadata(comp, rt.provider.name, model, prices, time.perf_counter() - t0)
    if thoughts:   # what the model streamed as its reasoning (not rendered into later prompts)
        md[REASONING_KEY] = "".join(thoughts)
    finish(w, rt, node.id, output=comp.text, status="completed", metadata=md)
    done = w.get_node(node.id)
    record_spend(rt, done)
    return done, comp


def usage_metadata(comp: Completion, provider: str, model: str, prices: Mapping[str, Price],
                   seconds: float) -> dict[str, Any]:
    """What a finished call records for the ledger (core/usage.py): tokens, latency, cost."""
    md: dict[str, Any] = {USAGE_INPUT: comp.input_tokens, USAGE_OUTPUT: comp.output_tokens,
                          RESPONSE_MODEL: comp.model or model, "finish_reason": comp.finish_reason,
                          LATENCY_KEY: round(seconds * 1000, 3),
                          COST_KEY: cost_record(prices, provider, model, comp.model, comp.input_tokens,
                                                comp.output_tokens, comp.cached_tokens)}
    if comp.cached_tokens is not None:
        md[USAGE_CACHED] = comp.cached_tokens
    if comp.reasoning_tokens is not None:
        md[USAGE_REASONING] = comp.reasoning_tokens
    return md


def _tag(e: BaseException, node_id: str) -> None:
    """Mark the exception as already recorded on `node_id` (callers must not record it again)."""
    try:
        setattr(e, "sessiondag_node_id", node_id)  # read back with getattr by the callers
    except AttributeError:
        pass


def finish(w: SessionWriter, rt: RuntimeApi, node_id: str, **fields: Unpack[NodeUpdate]) -> Call:
    """Finalize a node. Whatever goes wrong writing the update (a value that does not encode, a lone
    surrogate) the node still ends: with the update made encodable, else `error` saying why."""
    try:
        c = w.update(node_id, **fields)
    except RunCancelled:
        raise               # a fenced thread (tool_thread.py): it must not finalize anything
    except Exception as e:  # noqa: BLE001 - any failure of this update; a second one propagates
        c = _finish_anyway(w, node_id, fields, e)
    rt.emit("node_updated", session_id=w.session_id, node=c.to_dict())
    return c


def _finish_anyway(w: SessionWriter, node_id: str, fields: NodeUpdate, e: Exception) -> Call:
    clean = encodable_value(fields)
    if clean != fields:
        try:
            md = {**(clean.get("metadata") or {}), "sanitized": "lone surrogates replaced by U+FFFD"}
            return w.update(node_id, **{**clean, "metadata": md})
        except RunCancelled:
            raise
        except Exception:  # noqa: BLE001 - fall through to the error node
            pass
    out = clean.get("output")
    return w.update(node_id, status="error", output=out if isinstance(out, str) else "",
                    metadata={"error": encodable_value(error_metadata(e, traceback.format_exc()))})


def clean_completion(comp: Completion) -> Completion:
    """The completion with its text, tool names and arguments made encodable (core/text.py)."""
    comp.text = encodable(comp.text)
    for tc in comp.tool_calls:
        tc.name, tc.arguments = encodable(tc.name), encodable_value(tc.arguments)
    return comp
