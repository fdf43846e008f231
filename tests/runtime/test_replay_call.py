"""session/replay's engine (runtime/replay.py) against real providers on loopback: what reaches the
server is the manifest's messages with the overrides applied, byte for byte; the answer lands
beside the original on a new branch (in a sub-agent: in its frame); refusals are typed; compare."""

from __future__ import annotations

import json
import os
import sys

import orjson
import pytest

from loopback_openai import LoopbackOpenAI
from sessiondag.context.compare import compare
from sessiondag.context.messages import replay_messages
from sessiondag.core.errors import ReplayRefusedError
from sessiondag.runtime import Runtime, run_task
from sessiondag.runtime.context import SessionWriter
from sessiondag.runtime.providers import make_provider
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.runtime.replay import Overrides, replay_call

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from loopback_anthropic import LoopbackAnthropic  # noqa: E402

TURN = [{"text": "", "tool_calls": [{"id": "c1", "name": "list_dir", "arguments": {"path": "."}}]},
        {"match": "notes.txt", "text": "There is a notes file."}]


def _writer(store, sid):
    return SessionWriter(store, store.session(sid))


def _llm(s):
    return [c for c in s.get_branch() if c.role == "llm"]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.network
def test_replay_sends_the_manifest_messages_with_the_overrides(kind, store, workdir):
    (workdir / "notes.txt").write_text("n")
    server = LoopbackOpenAI if kind == "openai" else LoopbackAnthropic
    with server(TURN + [{"text": "replayed answer"}]) as srv:
        p = make_provider({"provider": kind, "base_url": srv.base_url, "model": "orig-model", "api_key": "k"})
        r = run_task("what is here?", working_dir=workdir, store=store, runtime=Runtime(p))
        s = store.session(r.session_id)
        head = s.head_id
        original = _llm(s)[1]
        sent_originally = srv.requests[1]["body"]
        # the manifest rebuilds the original request exactly
        assert replay_messages(s, original.id, format=kind)[-1] is not None
        other = make_provider({"provider": kind, "base_url": srv.base_url, "model": "other-model", "api_key": "k"})
        ov = Overrides(system="NEW SYSTEM", edits=[{"message_index": 1, "content": "edited question"}],
                       model="other-model")
        out = replay_call(_writer(store, r.session_id), Runtime(other), original.id, ov, name="try-other")
        sent = srv.requests[-1]["body"]
    assert sent["model"] == "other-model"
    if kind == "openai":
        want = list(sent_originally["messages"])
        want[0] = {**want[0], "content": "NEW SYSTEM"}
        want[1] = {**want[1], "content": "edited question"}
        assert orjson.dumps(sent["messages"]) == orjson.dumps(want)
        assert [t["function"]["name"] for t in sent["tools"]] == [t["function"]["name"] for t in sent_originally["tools"]]
    else:
        # the system prompt travels apart; message 0 of the request was the system item
        assert sent["system"] == "NEW SYSTEM"
        want = list(sent_originally["messages"])
        want[0] = {**want[0], "content": "edited question"}
        assert orjson.dumps(sent["messages"]) == orjson.dumps(want)
        assert [t["name"] for t in sent["tools"]] == [t["name"] for t in sent_originally["tools"]]
    new = out["node"]
    assert out["text"] == "replayed answer" and new.output == "replayed answer"
    assert (new.caller, new.predecessor) == (original.caller, original.predecessor)
    assert new.metadata["replay_of"] == original.id
    assert new.metadata["replay"] == ov.to_dict()
    assert new.metadata["gen_ai.request.model"] == "other-model"
    s = store.session(r.session_id)
    assert s.head_id == head  # HEAD stays on the original branch
    assert s.graph.branch_names[new.id] == "try-other" and out["branch"] == "try-other"
    assert not s.open_turn


@pytest.mark.network
def test_the_replay_of_an_exact_request_is_the_original_request(store, workdir):
    with LoopbackOpenAI([{"text": "one"}, {"text": "two"}]) as srv:
        p = make_provider({"provider": "openai", "base_url": srv.base_url, "model": "m", "api_key": "k"})
        r = run_task("hi", working_dir=workdir, store=store, runtime=Runtime(p))
        [orig] = _llm(store.session(r.session_id))
        replay_call(_writer(store, r.session_id), Runtime(p), orig.id)
        a, b = srv.requests[0]["body"], srv.requests[1]["body"]
    assert orjson.dumps(a) == orjson.dumps(b)


SUB = [
    {"text": "Delegating.", "tool_calls": [{"id": "s1", "name": "spawn_agent",
                                            "arguments": {"task": "subtask A", "name": "agent-A"}}]},
    {"match": "spawned", "text": "Working."},
    {"match": "subtask A", "text": "result A", "repeat": True},
    {"match": "finished:", "text": "noted", "repeat": True},
]


def test_a_replay_inside_a_subagent_stays_in_its_frame(store, workdir):
    r = run_task("split", working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider(SUB)))
    s = store.session(r.session_id)
    [root] = [c for c in s.graph.nodes.values() if c.is_spawn_root]
    sub_tip = s.graph.spawn_heads[root.id]
    [sub_call] = [c for c in s.get_branch(sub_tip) if c.role == "llm"]
    prov = ScriptedProvider([{"text": "another result"}])
    out = replay_call(_writer(store, r.session_id), Runtime(prov), sub_call.id)
    new = out["node"]
    assert (new.caller, new.predecessor) == (root.id, sub_call.predecessor)
    [req] = prov.requests
    assert orjson.dumps(req["messages"]) == orjson.dumps(replay_messages(s, sub_call.id))
    assert any("Instructions of `sub_agent`" in (m.get("content") or "") for m in req["messages"])
    # compare: the sub-agent's branch against its replay
    c = compare(s, sub_tip, new.id)
    d = c["first_divergence"]
    assert d["why"] == "the answers differ" and (d["a"], d["b"]) == (sub_call.id, new.id)
    assert c["shared"] == len(s.get_branch(new.id)) - 1


def test_refusals_are_typed_and_write_nothing(store, workdir):
    r = run_task("hi", working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider([{"text": "x"}])))
    s = store.session(r.session_id)
    [orig] = _llm(s)
    n = len(s.graph.nodes)
    prov = ScriptedProvider([{"text": "never"}])
    w = _writer(store, r.session_id)
    with pytest.raises(ReplayRefusedError) as e:
        replay_call(w, Runtime(prov), orig.caller)
    assert e.value.reason == "not_a_model_call"
    with pytest.raises(ReplayRefusedError) as e:
        replay_call(w, Runtime(prov), orig.id, Overrides(edits=[{"message_index": 99, "content": "x"}]))
    assert e.value.reason == "bad_edit"
    m = dict(orig.metadata["render_manifest"], policy_version=-1)
    s.update(orig.id, metadata={"render_manifest": m})
    n = len(s.graph.nodes)
    with pytest.raises(ReplayRefusedError) as e:
        replay_call(w, Runtime(prov), orig.id)
    assert e.value.reason == "policy_version" and e.value.data() == {"node_id": orig.id, "reason": "policy_version"}
    assert len(s.graph.nodes) == n and prov.requests == []


def test_compare_two_branches_turn_by_turn(store, workdir):
    (workdir / "notes.txt").write_text("n")
    r = run_task("what is here?", working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider(TURN)))
    s = store.session(r.session_id)
    first = _llm(s)[0]
    alt = ScriptedProvider([{"text": "", "tool_calls": [{"id": "c9", "name": "read_file",
                                                         "arguments": {"path": "notes.txt"}}]}])
    out = replay_call(_writer(store, r.session_id), Runtime(alt), first.id)
    c = compare(s, s.head_id, out["node"].id)
    assert c["first_divergence"]["why"] == "the tool calls differ"
    [row] = c["turns"]
    assert [t["name"] for t in row["a"]["calls"][0]["tool_calls"]] == ["list_dir"]
    assert row["a"]["calls"][0]["tool_calls"][0]["result"] is not None
    assert row["b"]["calls"][0]["tool_calls"] == [{"node_id": None, "name": "read_file",
                                                   "arguments": {"path": "notes.txt"}, "result": None,
                                                   "status": "not_run"}]
    assert c["a"]["usage"]["calls"] == 2 and c["b"]["usage"]["calls"] == 1
    assert json.loads(orjson.dumps(c)) == c  # JSON-able
