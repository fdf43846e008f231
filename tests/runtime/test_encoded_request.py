"""The runtime hands an OpenAI-compatible provider its messages as their JSON encoding
(context/encoded_messages.py) and the provider splices them into the request body
(openai_compat.request_body). What reaches the server must be byte for byte what the SDK sends for
the same messages as plain dicts — over a real loopback server recording each request's bytes."""

from __future__ import annotations

import os

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from loopback_openai import LoopbackOpenAI
from sessiondag.context.encoded_messages import EncodedMessages
from sessiondag.context.messages import with_call_extras, with_instructions
from sessiondag.context.renderer import REFERENCE
from sessiondag.runtime import Runtime, run_turn, session_context
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider

pytestmark = pytest.mark.network   # loopback network (tests/tiers.py)
NEVER = lambda: False  # noqa: E731
EXAMPLES = int(os.environ.get("SESSIONDAG_PROPERTY_EXAMPLES", "30"))

# strings whose JSON escaping could differ between encoders: controls, quotes, backslashes, U+2028,
# DEL, astral characters, and anything else st.text makes
TRICKY = ["\x00\x1f\x7f", '"\\"', "\u2028\u2029", "é ☃ 𝄞", "\n\r\t\b\f", "</script>", ""]
TEXT = st.one_of(st.sampled_from(TRICKY), st.text(max_size=20))
# the values a rendered message holds: strings, lists and objects of them (no numbers, see messages.py)
VALUE = st.recursive(st.one_of(TEXT, st.booleans(), st.none()),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                     max_leaves=8)
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool"]),
                                 "content": st.one_of(TEXT, st.lists(st.fixed_dictionaries(
                                     {"type": st.just("text"), "text": TEXT}), max_size=3))},
                                optional={"tool_calls": st.lists(VALUE, max_size=2), "tool_call_id": TEXT})
TOOLS = [{"type": "function", "function": {"name": "grep", "description": "search ☃ \"x\"",
                                           "parameters": {"type": "object", "properties": {
                                               "n": {"type": "number", "minimum": 1e-07, "maximum": 1e16}}}}}]


def _sent(srv: LoopbackOpenAI, p: OpenAICompatProvider, messages, tools) -> dict:
    n = len(srv.requests)
    p.complete(messages, tools, on_text=lambda d: None, cancelled=NEVER)
    return srv.requests[n]


def _same_request(a: dict, b: dict) -> None:
    assert a["raw"] == b["raw"]
    assert a["path"] == b["path"] and a["headers"] == b["headers"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.function_scoped_fixture])
@given(st.lists(MESSAGE, max_size=6), st.sampled_from([None, "be brief ☃"]), st.booleans())
def test_encoded_messages_are_sent_as_the_sdk_sends_the_plain_ones(msgs, block, options):
    extra = {"temperature": 0.25, "max_tokens": 100} if options else {}
    with LoopbackOpenAI([{"text": "ok", "repeat": True}]) as srv:
        p = OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m ☃", **extra)
        for tools in ([], TOOLS):
            plain = with_instructions(list(msgs), block) + [{"role": "user", "content": "last \x00"}]
            enc = with_instructions(EncodedMessages([orjson.dumps(m) for m in msgs]), block)
            enc.append({"role": "user", "content": "last \x00"})
            assert enc.json() == orjson.dumps(plain) and enc.size() == len(enc.json())
            assert enc.decoded() == plain
            _same_request(_sent(srv, p, plain, tools), _sent(srv, p, enc, tools))


@settings(max_examples=max(3, EXAMPLES // 6), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=4))
def test_a_turn_sends_what_the_sdk_sends_for_the_reference_render(tmp_path_factory, turns):
    """Each call of real chat turns (a tool call and its result among them) against the SDK's body
    for the reference renderer's plain messages of the same manifest."""
    from sessiondag.store import SessionStore
    state, work = tmp_path_factory.mktemp("state"), tmp_path_factory.mktemp("work")
    (work / "a.txt").write_text("alpha \"β\"\n")
    replies = []
    for _, answer in turns:
        replies += [{"text": answer, "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
                    {"text": answer + " done"}]
    store = SessionStore(str(state))
    try:
        with LoopbackOpenAI(replies) as srv:
            p = OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m")
            rt = Runtime(p)
            with session_context(working_dir=str(work), store=store, runtime=rt) as h:
                for prompt, _ in turns:
                    assert run_turn(prompt or "go").stop_reason == "end_turn"
            sent = list(srv.requests)
            s = h.session
            llms = sorted((c for c in s.graph.nodes.values() if c.role == "llm"), key=lambda c: c.seq)
            assert len(llms) == len(sent) == 2 * len(turns)
            srv.replies.append({"text": "again", "repeat": True})
            for llm, got in zip(llms, sent):
                m = llm.metadata["render_manifest"]
                ref, _ = REFERENCE.messages(s, m["head_id"], frame=m.get("frame"), manifest=m)
                _same_request(got, _sent(srv, p, with_call_extras(ref, m), got["body"].get("tools") or []))
    finally:
        store.close()
