"""The same scripted task through the CLI (a real subprocess), the Python API and the daemon
(`agent/prompt` over stdio) yields the same DAG shape, and in all three the instructions in the
sub-agent function's docstring reach the model — asserted on what a real loopback
OpenAI-compatible server received."""

import json
import os

import anyio
import jsonschema
import pytest

from cli_support import run_cli
from loopback_openai import LoopbackOpenAI
from sessiondag.core.model import ROOT
from sessiondag.rpc import schema as rpc_schema
from sessiondag.runtime import Runtime, run_task
from sessiondag.runtime.providers.openai_compat import OpenAICompatProvider
from sessiondag.runtime.subagents import sub_agent
from sessiondag.store import SessionStore

pytestmark = pytest.mark.network   # loopback network (tests/tiers.py)

TASK = "TASK-ALPHA: read notes.txt and have a helper count its words"
REPLIES = [
    {"match": "TASK-ALPHA", "text": "Looking.", "tool_calls": [
        {"id": "call_r", "name": "read_file", "arguments": {"path": "notes.txt"}},
        {"id": "call_s", "name": "spawn_agent", "arguments": {"task": "SUBTASK: count the words in notes.txt",
                                                              "name": "counter"}}]},
    {"match": "spawned sub-agent", "text": "Started a helper."},
    {"match": "SUBTASK", "text": "There are 4 words.", "usage": {"prompt_tokens": 30, "completion_tokens": 5}},
    {"match": "finished: completed", "text": "The helper reports 4 words."},
]
DOC_LINE = sub_agent.__doc__.strip().splitlines()[0]


def sig(c):
    return (c.role, c.name, c.status, c.metadata.get("source"), "tool_call_id" in c.metadata,
            c.predecessor is None, c.caller == ROOT)


def shape(s):
    g = s.graph
    spine = [sig(c) for c in s.get_branch()]
    spawns = sorted(tuple(sig(c) for c in s.get_branch(tip)) for tip in g.spawn_heads.values())
    edges = sorted((sig(c), sig(g.nodes[c.caller])) for c in g.nodes.values() if c.id != ROOT and c.caller != ROOT)
    return spine, spawns, edges


def docstring_reached(srv):
    sub = [r for r in srv.requests if str(r["body"]["messages"][-1].get("content")).startswith("SUBTASK")]
    assert sub, "the sub-agent never called the model"
    others = [r for r in srv.requests if r not in sub]
    assert others and not any(DOC_LINE in str(m.get("content")) for r in others for m in r["body"]["messages"])
    return all(any(m["role"] == "system" and DOC_LINE in m["content"] for m in r["body"]["messages"]) for r in sub)


@pytest.fixture
def wd(tmp_path):
    d = tmp_path / "project"
    d.mkdir()
    (d / "notes.txt").write_text("one two three four\n")
    return d


def test_cli_python_api_and_daemon_agree(tmp_path, wd):
    shapes, results = {}, {}

    # 1. the CLI, a real subprocess
    with LoopbackOpenAI(REPLIES, model="m") as srv:
        home = tmp_path / "cli-home"
        r = run_cli(["run", TASK, "--provider", "openai", "--json", "--workdir", wd], home=home,
                    env={"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "k", "SESSIONDAG_MODEL": "m"})
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout)
        st = SessionStore(home)
        shapes["cli"], results["cli"] = shape(st.session(res["session_id"])), res
        st.close()
        assert docstring_reached(srv)

    # 2. the Python API
    with LoopbackOpenAI(REPLIES, model="m") as srv:
        store = SessionStore(tmp_path / "api-home")
        rt = Runtime(OpenAICompatProvider(base_url=srv.base_url, api_key="k", model="m"))
        res = run_task(TASK, working_dir=wd, store=store, runtime=rt)
        shapes["api"], results["api"] = shape(store.session(res.session_id)), res.to_dict()
        store.close()
        assert docstring_reached(srv)

    # 3. the daemon: agent/prompt over stdio
    with LoopbackOpenAI(REPLIES, model="m") as srv:
        state = tmp_path / "daemon-home"
        env = dict(os.environ, SESSIONDAG_PROVIDER="openai", OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="k",
                   SESSIONDAG_MODEL="m", SESSIONDAG_HOME=str(state))
        res, notes = anyio.run(_via_daemon, str(state), str(wd), env)
        st = SessionStore(state)
        shapes["daemon"], results["daemon"] = shape(st.session(res["session_id"])), res
        st.close()
        assert docstring_reached(srv)
        params_schema = rpc_schema.params_schema("agent/did_update")
        for n in notes:
            jsonschema.validate(n, params_schema)
        kinds = [n["kind"] for n in notes]
        assert "text_delta" in kinds and "tool_call" in kinds and kinds.count("turn_finished") == 2

    assert shapes["cli"] == shapes["api"] == shapes["daemon"]
    spine = shapes["api"][0]
    assert [x[:4] for x in spine] == [
        ("code", "context/system_prompt", "completed", None), ("user", "user", "completed", None),
        ("llm", "m", "completed", None), ("code", "read_file", "completed", None),
        ("code", "spawn_agent", "completed", None), ("llm", "m", "completed", None),
        ("user", "task", "completed", "task_followup"), ("llm", "m", "completed", None)]
    for k in ("cli", "api", "daemon"):
        assert results[k]["stop_reason"] == "end_turn", k


async def _via_daemon(state, wd, env):
    from sessiondag_client.connecting import spawn_stdio
    client = await spawn_stdio(state, env=env)
    notes = []
    try:
        h = await client.open(working_dir=wd)
        sid = h.id if hasattr(h, "id") else h["session_id"]
        result = await client.agent_prompt(session_id=sid, content=TASK)
        jsonschema.validate(result, rpc_schema.result_schema("agent/prompt"))
        finished = 0
        with anyio.fail_after(60):
            while finished < 2:
                msg = await client.next_notification("agent/did_update", timeout=60)
                notes.append(msg["params"])
                finished += msg["params"]["kind"] == "turn_finished"
        result["session_id"] = sid
        return result, notes
    finally:
        await client.aclose()
