"""A model call made inside an agentic function replays byte-exactly from its manifest (the
injected instructions and the in-function prompt are in it), and a function called outside any
chat turn ships the same recorded project system prompt as a chat turn — over a real loopback
OpenAI-compatible server, comparing with what went over the wire."""

import pytest

from agentic_fixtures import SUMMARIZE_MARK, summarize
from loopback_openai import LoopbackOpenAI
from sessiondag.context.messages import replay_messages
from sessiondag.runtime import Runtime, agentic_function, current_runtime, run_turn, session_context
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider

pytestmark = pytest.mark.network   # loopback network (tests/tiers.py)


@agentic_function
def review(topic: str) -> str:
    """REVIEW-INSTRUCTIONS: check the topic, then summarize it."""
    first = current_runtime().exec(f"Check {topic}")
    return summarize(first)


def _llms(s):
    return sorted((c for c in s.graph.nodes.values() if c.role == "llm"), key=lambda c: c.seq)


def test_calls_in_functions_replay_byte_exactly_and_top_level_calls_get_the_project_prompt(store, workdir):
    replies = [{"text": "checked"}, {"text": "summary"}, {"text": "chat answer"}, {"text": "again"}]
    with LoopbackOpenAI(replies) as srv:
        rt = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"))
        with session_context(working_dir=workdir, store=store, runtime=rt) as h:
            assert review("the parser") == "summary"       # a library call: no chat turn
            r = run_turn("and now a chat turn")
            assert r.stop_reason == "end_turn"
            assert rt.exec("one more, top level") == "again"
        sent = [req["body"]["messages"] for req in srv.requests]
    s = h.session
    llms = _llms(s)
    assert len(llms) == len(sent) == 4
    for llm, wire in zip(llms, sent):  # every call, nested or not, replays to the bytes it sent
        assert replay_messages(s, llm.id) == wire, llm.name
    in_fn, nested, chat, top = sent
    assert any(m["role"] == "system" and "REVIEW-INSTRUCTIONS" in m["content"] for m in in_fn)
    assert any(m["role"] == "system" and SUMMARIZE_MARK in m["content"] for m in nested)
    assert in_fn[-1] == {"role": "user", "content": "Check the parser"}
    # the project system prompt: the same first message in a chat turn and outside one
    assert chat[0]["role"] == "system" and chat[0]["content"].startswith(rt.identity)
    for wire in (in_fn, nested, top):
        assert wire[0] == chat[0]
