"""What an llm node records for the ledger, from real providers on loopback (tokens with their
cached / reasoning details, latency, cost from the price table or "unknown"), the roll-up of a
real run with sub-agents, and budgets that stop a turn (and a sub-agent) before the call."""

from __future__ import annotations

import os
import sys

import pytest

from loopback_openai import LoopbackOpenAI
from sessiondag.context.ledger import BY, session_usage
from sessiondag.core.usage import COST_KEY, LATENCY_KEY, USAGE_CACHED, USAGE_REASONING
from sessiondag.runtime import Runtime, run_task
from sessiondag.runtime.budget import Budget
from sessiondag.runtime.providers import make_provider
from sessiondag.store import SessionStore
from sessiondag.runtime.providers.scripted import ScriptedProvider

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from loopback_anthropic import LoopbackAnthropic  # noqa: E402


def _llm(s):
    return [c for c in s.graph.nodes.values() if c.role == "llm"]


@pytest.mark.network
def test_openai_usage_details_latency_and_cost(store, workdir):
    usage = {"prompt_tokens": 1000, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 400},
             "completion_tokens_details": {"reasoning_tokens": 20}}
    with LoopbackOpenAI([{"text": "hi", "usage": usage}], model="gpt-4o-mini-2024-07-18") as srv:
        p = make_provider({"provider": "openai", "base_url": srv.base_url, "model": "gpt-4o-mini", "api_key": "k"})
        r = run_task("hello", working_dir=workdir, store=store, runtime=Runtime(p))
    s = store.session(r.session_id)
    [n] = _llm(s)
    md = n.metadata
    assert (md["gen_ai.usage.input_tokens"], md["gen_ai.usage.output_tokens"]) == (1000, 50)
    assert (md[USAGE_CACHED], md[USAGE_REASONING]) == (400, 20)
    assert md["provider"] == "openai" and md["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
    assert isinstance(md[LATENCY_KEY], float) and md[LATENCY_KEY] > 0
    # 600 uncached at $0.15, 400 cached at $0.075, 50 out at $0.60 per Mtok
    assert md[COST_KEY]["pusd"] == 600 * 150_000 + 400 * 75_000 + 50 * 600_000
    assert md[COST_KEY]["price"] == "openai/gpt-4o-mini"
    t = session_usage(s, "model")
    assert [row["key"] for row in t["rows"]] == ["openai/gpt-4o-mini"]
    assert t["total"]["cost_usd"] == 150_000_000 / 10 ** 12 and t["total"]["cached_tokens"] == 400


@pytest.mark.network
def test_anthropic_cache_reads_count_as_cached_input(store, workdir):
    u = {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 900}
    with LoopbackAnthropic([{"text": "hi", "usage": u}], model="claude-sonnet-4-5-20250929") as srv:
        p = make_provider({"provider": "anthropic", "base_url": srv.base_url, "model": "claude-sonnet-4-5",
                           "api_key": "k"})
        r = run_task("hello", working_dir=workdir, store=store, runtime=Runtime(p))
    [n] = _llm(store.session(r.session_id))
    md = n.metadata
    assert (md["gen_ai.usage.input_tokens"], md[USAGE_CACHED]) == (1000, 900)
    assert USAGE_REASONING not in md  # not reported: not recorded
    assert md[COST_KEY]["pusd"] == 100 * 3_000_000 + 900 * 300_000 + 10 * 15_000_000


@pytest.mark.network
def test_prices_missing_is_unknown_and_a_config_price_is_used(store, workdir, tmp_path, monkeypatch):
    with LoopbackOpenAI([{"text": "a"}, {"text": "b"}]) as srv:
        p = make_provider({"provider": "openai", "base_url": srv.base_url, "model": "my-local", "api_key": "k"})
        r = run_task("one", working_dir=workdir, store=store, runtime=Runtime(p))
        s = store.session(r.session_id)
        assert _llm(s)[0].metadata[COST_KEY] == "unknown"
        assert session_usage(s, "model")["total"]["cost_usd"] is None
        cfg = tmp_path / "config.toml"
        cfg.write_text('[prices."openai/my-local"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n')
        monkeypatch.setenv("SESSIONDAG_CONFIG", str(cfg))
        priced = SessionStore(store.state_dir)   # a store resolves its settings (the prices) when built
        run_task("two", session_id=r.session_id, store=priced, runtime=Runtime(p))
        priced.close()
    second = _llm(s)[-1].metadata[COST_KEY]
    assert second["pusd"] == 11 * 1_000_000 + 7 * 2_000_000 and second["price"] == "openai/my-local"
    t = session_usage(s, "node")["total"]
    assert t["cost_usd"] is None and t["unpriced_calls"] == 1 and t["priced_cost_usd"] == second["usd"]


SUB_SCRIPT = [
    {"text": "Delegating.", "tool_calls": [{"id": "s1", "name": "spawn_agent",
                                            "arguments": {"task": "subtask A", "name": "agent-A"}}],
     "usage": {"input_tokens": 100, "output_tokens": 10}},
    {"match": "spawned", "text": "Working.", "usage": {"input_tokens": 100, "output_tokens": 10}},
    {"match": "subtask A", "text": "result A", "usage": {"input_tokens": 40, "output_tokens": 4}},
    {"match": "finished:", "text": "noted", "repeat": True, "usage": {"input_tokens": 7, "output_tokens": 1}},
]


def test_a_run_with_a_subagent_rolls_up_on_the_spawning_branch(store, workdir):
    r = run_task("split", working_dir=workdir, store=store, runtime=Runtime(ScriptedProvider(SUB_SCRIPT)))
    s = store.session(r.session_id)
    with s.lock:
        total = session_usage(s, "node")["total"]
        assert total["input_tokens"] == 100 + 100 + 40 + 7 and total["calls"] == 4
        for by in BY:
            rows = session_usage(s, by)["rows"]
            assert sum(x["input_tokens"] for x in rows) == total["input_tokens"], by
        subs = {x["key"]: x for x in session_usage(s, "subagent")["rows"]}
        [root] = [k for k in subs if k is not None]
        assert subs[root]["input_tokens"] == 40 and subs[root]["name"] == "agent-A"
        assert subs[None]["input_tokens"] == 207
        # the main branch pays for its sub-agent: the whole session is on its one segment
        [branch] = session_usage(s, "branch")["rows"]
        assert branch["head_id"] == s.head_id and branch["input_tokens"] == 247
        turns = session_usage(s, "turn")["rows"]
        assert sorted(x["input_tokens"] for x in turns) == [7, 240]  # the follow-up turn is its own


def _budget_error(node):
    err = node.metadata["error"]
    assert node.status == "error" and err["code"] == "budget_exceeded", err
    return err["budget"]


def test_a_token_budget_ends_the_turn_mid_way_on_a_committed_error_node(store, workdir):
    script = [{"text": "", "tool_calls": [{"id": "t1", "name": "list_dir", "arguments": {"path": "."}}],
               "usage": {"input_tokens": 5000, "output_tokens": 10}},
              {"text": "never", "usage": {"input_tokens": 1, "output_tokens": 1}}]
    prov = ScriptedProvider(script)
    rt = Runtime(prov, budget=Budget(tokens=5010))
    r = run_task("look", working_dir=workdir, store=store, runtime=rt)
    assert r.stop_reason == "error" and r.error["code"] == "budget_exceeded"
    assert len(prov.requests) == 1  # the second call was never sent
    s = store.session(r.session_id)
    head = s.get_node(s.head_id)
    b = _budget_error(head)
    assert (b["scope"], b["unit"], b["limit"], b["spent"]) == ("run", "tokens", 5010, 5010)
    assert s.get_node(head.predecessor).name == "list_dir"  # mid-turn: after the tool call
    assert not s.open_turn  # committed


def test_a_budget_stops_a_subagent_and_its_followup(store, workdir):
    script = [dict(SUB_SCRIPT[0], usage={"input_tokens": 100_000, "output_tokens": 10}), SUB_SCRIPT[1]]
    prov = ScriptedProvider(script)
    # the first call spends the whole budget: the sub-agent's call, the spawning turn's next call
    # and the follow-up turn's are each refused before they are sent
    rt = Runtime(prov, budget=Budget(tokens=100_010))
    r = run_task("split", working_dir=workdir, store=store, runtime=rt)
    s = store.session(r.session_id)
    spawned = [c for c in s.graph.nodes.values() if c.role == "llm" and c.status == "error"]
    assert spawned, "the sub-agent ran past its budget"
    errs = [_budget_error(c) for c in spawned]
    assert {e["scope"] for e in errs} == {"run"}
    sub_root = [c for c in s.graph.nodes.values() if c.is_spawn_root][0]
    lanes = {c.id for c in s.get_branch(s.graph.spawn_heads[sub_root.id])}
    assert any(c.id in lanes for c in spawned)  # on the sub-agent's branch
    assert len(prov.requests) == 1
    followup = [c for c in s.get_branch() if c.metadata.get("source") == "task_followup"]
    assert followup and s.get_node(s.head_id).metadata["error"]["code"] == "budget_exceeded"


def test_a_dollar_budget_refuses_an_unpriced_model(store, workdir):
    prov = ScriptedProvider([{"text": "x"}])
    r = run_task("hi", working_dir=workdir, store=store, runtime=Runtime(prov, budget=Budget(usd=1.0)))
    s = store.session(r.session_id)
    b = _budget_error(s.get_node(s.head_id))
    assert b["reason"] == "unpriced" and prov.requests == []
