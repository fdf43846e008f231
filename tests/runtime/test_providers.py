import threading

import pytest

from loopback_openai import LoopbackOpenAI
from sessiondag.runtime.errors import RunCancelled
from sessiondag.runtime.providers import ProviderError, make_provider
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider
from sessiondag.runtime.providers.scripted import ScriptedProvider

NEVER = lambda: False  # noqa: E731


def test_scripted_without_script_is_deterministic():
    a, b = ScriptedProvider(), ScriptedProvider()
    msgs = [{"role": "user", "content": "fix the bug"}]
    ca = a.complete(msgs, [], on_text=lambda d: None, cancelled=NEVER)
    cb = b.complete(msgs, [], on_text=lambda d: None, cancelled=NEVER)
    assert ca.text == cb.text and "fix the bug" in ca.text
    assert ca.input_tokens == cb.input_tokens > 0 and ca.tool_calls == []


def test_scripted_yaml_script_match_and_tool_calls(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("model: m1\nreplies:\n"
                 "  - match: second\n    text: for the second\n"
                 "  - text: calling\n    tool_calls: [{name: read_file, arguments: {path: a.txt}}]\n"
                 "    usage: {input_tokens: 5, output_tokens: 2}\n")
    sp = make_provider({"provider": "scripted", "script": str(p)})
    deltas = []
    c = sp.complete([{"role": "user", "content": "first"}], [], on_text=deltas.append, cancelled=NEVER)
    assert c.text == "calling" and "".join(deltas) == "calling"
    assert [(t.name, t.arguments) for t in c.tool_calls] == [("read_file", {"path": "a.txt"})]
    assert (c.input_tokens, c.output_tokens, c.model) == (5, 2, "m1")
    c2 = sp.complete([{"role": "user", "content": "the second one"}], [], on_text=lambda d: None, cancelled=NEVER)
    assert c2.text == "for the second"
    with pytest.raises(ProviderError, match="no reply left"):
        sp.complete([{"role": "user", "content": "third"}], [], on_text=lambda d: None, cancelled=NEVER)


def test_scripted_json_error_keeps_partial(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('[{"text": "half an answer", "error": "stream broke"}]')
    sp = make_provider({"provider": "scripted", "script": str(p)})
    with pytest.raises(ProviderError) as ei:
        sp.complete([{"role": "user", "content": "x"}], [], on_text=lambda d: None, cancelled=NEVER)
    assert ei.value.partial == "half an answer"


def test_scripted_hang_is_cancellable():
    sp = ScriptedProvider([{"text": "wait", "hang": True}])
    ev = threading.Event()
    t = threading.Timer(0.05, ev.set)
    t.start()
    with pytest.raises(RunCancelled):
        sp.complete([{"role": "user", "content": "x"}], [], on_text=lambda d: None, cancelled=ev.is_set)


def test_scripted_bad_script(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("just: [a, mapping]\n")
    with pytest.raises(ProviderError):
        ScriptedProvider(str(p))


@pytest.mark.network
def test_openai_streaming_tool_call_deltas_and_usage():
    replies = [{"text": "Let me read it.", "tool_calls": [
        {"id": "call_A", "name": "read_file", "arguments": {"path": "notes/a b.txt", "n": [1, 2]}},
        {"id": "call_B", "name": "list_dir", "arguments": {}}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 9}}]
    with LoopbackOpenAI(replies) as srv:
        p = OpenAICompatProvider(base_url=srv.base_url, api_key="k-test", model="m-x")
        deltas = []
        tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
        c = p.complete([{"role": "user", "content": "read"}], tools, on_text=deltas.append, cancelled=NEVER)
        assert c.text == "Let me read it." and len(deltas) > 1
        assert [(t.id, t.name, t.arguments) for t in c.tool_calls] == [
            ("call_A", "read_file", {"path": "notes/a b.txt", "n": [1, 2]}), ("call_B", "list_dir", {})]
        assert (c.input_tokens, c.output_tokens) == (42, 9)
        assert c.finish_reason == "tool_calls"
        req = srv.requests[0]
        assert req["auth"] == "Bearer k-test"
        assert req["body"]["stream"] is True and req["body"]["stream_options"] == {"include_usage": True}
        assert req["body"]["model"] == "m-x" and req["body"]["tools"] == tools
        assert req["body"]["messages"] == [{"role": "user", "content": "read"}]


@pytest.mark.network
def test_openai_mid_stream_disconnect_is_a_provider_error_with_partial():
    with LoopbackOpenAI([{"text": "partial text here", "break": True}]) as srv:
        p = OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m")
        with pytest.raises(ProviderError) as ei:
            p.complete([{"role": "user", "content": "x"}], [], on_text=lambda d: None, cancelled=NEVER)
        assert ei.value.partial == "partial text here"


@pytest.mark.network
def test_openai_http_error_is_typed():
    with LoopbackOpenAI([]) as srv:
        p = OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m")
        with pytest.raises(ProviderError, match="400|BadRequest"):
            p.complete([{"role": "user", "content": "x"}], [], on_text=lambda d: None, cancelled=NEVER)


def test_openai_config_roundtrip():
    p = OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    q = make_provider(p.config())
    assert (q.base_url, q.api_key, q.model) == ("http://127.0.0.1:9/v1", "k", "m")
