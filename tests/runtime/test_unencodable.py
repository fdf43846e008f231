"""Issue 19, item 4: a lone surrogate in streamed provider text, or a tool result the store cannot
encode, never leaves a node `running`: the text is made encodable (U+FFFD), anything else that
fails a node's finalization ends the node `error`, and the turn is committed."""

import pytest

from loopback_openai import LoopbackOpenAI

from sessiondag.runtime import Runtime, run_task
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.tool_result import ToolResult
from sessiondag.runtime.tools import Tool

NO_ARGS = {"type": "object", "properties": {}}


@pytest.mark.network
def test_a_lone_surrogate_in_streamed_text_keeps_the_text_and_commits(store, workdir):
    with LoopbackOpenAI([{"text": "partial \ud800 answer, still here"}]) as srv:
        rt = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"))
        deltas = []
        rt.on_event = lambda kind, data: deltas.append(data["delta"]) if kind == "text_delta" else None
        r = run_task("hi", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    assert r.stop_reason == "end_turn", r.error
    llm = s.get_node(r.head_id)
    assert (llm.role, llm.status, llm.output) == ("llm", "completed", "partial \ufffd answer, still here")
    assert "".join(deltas) == llm.output
    assert not s.open_turn


def test_tool_results_that_do_not_encode_end_their_node_and_the_turn_goes_on(store, workdir):
    tools = (Tool("surrogate", "a name that is not UTF-8", NO_ARGS, lambda ctx: "bad\udcff.txt"),
             Tool("unstorable", "metadata the store cannot encode", NO_ARGS,
                  lambda ctx: ToolResult("fine text", {"handle": object()})))
    script = [{"match": "go", "tool_calls": [{"name": "surrogate", "arguments": {}},
                                             {"name": "unstorable", "arguments": {}}]},
              {"text": "done"}]
    r = run_task("go", working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider(script), extra_tools=tools))
    s = store.session(r.session_id)
    assert r.stop_reason == "end_turn" and r.text == "done", r.error
    sur, uns = [c for c in s.get_branch() if c.name in ("surrogate", "unstorable")]
    assert (sur.status, sur.output) == ("completed", "bad\ufffd.txt") and sur.metadata["sanitized"]
    assert uns.status == "error" and uns.output == "fine text" and "error" in uns.metadata
    assert not s.open_turn and not [c for c in s.graph.nodes.values() if c.status == "running"]
