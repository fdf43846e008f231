"""A real compiled LangGraph agent (model node, interrupt, ToolNode) checkpointed by
SessiondagSaver: interrupt, resume, time travel to an earlier checkpoint, fork with update_state;
the forks are branches of the session DAG, the checkpoints are in git, another process resumes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from sessiondag.integrations.langgraph import AsyncSessiondagSaver, SessiondagSaver
from sessiondag.store import SessionStore

from .lg_agent import build

HERE = os.path.dirname(os.path.abspath(__file__))


def texts(state) -> list[str]:
    return [m.content for m in state.values["messages"]]


def test_interrupt_resume_time_travel_fork(tmp_path):
    state_dir = tmp_path / "state"
    saver = SessiondagSaver(state_dir, commit_every=1)  # one git commit per checkpoint
    graph = build(saver)
    cfg = {"configurable": {"thread_id": "calc"}}

    out = graph.invoke({"messages": [HumanMessage("what is 2 + 3?")]}, cfg)
    assert "__interrupt__" in out and out["__interrupt__"][0].value == {"tool": "add", "args": {"a": 2, "b": 3}}
    st = graph.get_state(cfg)
    assert st.next == ("review",)

    out = graph.invoke(Command(resume="approve"), cfg)
    assert [m.content for m in out["messages"]][-2:] == ["5", "2 + 3 = 5"]
    assert graph.get_state(cfg).next == ()

    history = list(graph.get_state_history(cfg))
    assert len(history) >= 5
    ids = [h.config["configurable"]["checkpoint_id"] for h in history]
    assert ids == sorted(ids, reverse=True)  # newest first
    paused = next(h for h in history if h.next == ("review",))

    # time travel: replay from the paused checkpoint (it interrupts again), reject this time
    out = graph.invoke(None, paused.config)
    assert "__interrupt__" in out
    out = graph.invoke(Command(resume="no thanks"), cfg)
    assert out["messages"][-1].content == "tool call rejected: no thanks"
    # fork: edit the state at the first model step and run on from there
    first = next(h for h in reversed(history) if h.next == ("agent",))
    forked = graph.update_state(first.config, {"messages": [HumanMessage("and 2 + 3 again?")]})
    assert forked["configurable"]["checkpoint_id"] not in ids
    graph.invoke(None, forked)
    graph.invoke(Command(resume="approve"), forked | {"configurable": {"thread_id": "calc"}})
    latest = graph.get_state(cfg)
    assert "and 2 + 3 again?" in texts(latest)
    assert texts(latest)[-1] == "2 + 3 = 5"
    # the original branch's end state is still there, unchanged
    end_of_first = graph.get_state({"configurable": {"thread_id": "calc", "checkpoint_id": ids[0]}})
    assert texts(end_of_first)[-2:] == ["5", "2 + 3 = 5"] and "and 2 + 3 again?" not in texts(end_of_first)

    s = saver.session_for("calc")
    branches = s.list_branches()
    assert len(branches) >= 3  # the first run, the rejected resume, the update_state fork
    tips = {b.head_id for b in branches}
    assert ids[0] in tips and paused.config["configurable"]["checkpoint_id"] not in tips
    previews = [m for c in s.get_branch(ids[0]) for m in c.output.get("messages", [])]
    assert previews == ["human: what is 2 + 3?", "ai: [add({'a': 2, 'b': 3})]", "tool: 5", "ai: 2 + 3 = 5"]
    # each checkpoint node's predecessor is its parent checkpoint
    for h in graph.get_state_history(cfg):
        if h.parent_config:
            node = s.get_node(h.config["configurable"]["checkpoint_id"])
            assert node.predecessor == h.parent_config["configurable"]["checkpoint_id"]
    saver.close()

    git_dir = os.path.join(SessionStore(state_dir).path_of(s.id), "git")
    log = subprocess.run(["git", "--git-dir", git_dir, "log", "--oneline"], capture_output=True, text=True, check=True)
    assert "langgraph checkpoint" in log.stdout and len(log.stdout.splitlines()) >= len(ids)
    for cid in ids:  # every checkpoint node is in the snapshot git holds
        subprocess.run(["git", "--git-dir", git_dir, "grep", "-q", "-F", cid, "HEAD"], check=True)
    subprocess.run(["git", "--git-dir", git_dir, "fsck", "--strict"], capture_output=True, check=True)
    cli = os.path.join(os.path.dirname(sys.executable), "sessiondag")
    show = subprocess.run([cli, "sessions", "branches", s.id], capture_output=True, text=True,
                          env={**os.environ, "SESSIONDAG_HOME": str(state_dir)})
    assert show.returncode == 0, show.stderr
    assert ids[0][:12] in show.stdout  # the listing shows short ids, as `git log --oneline` does
    show = subprocess.run([cli, "sessions", "branches", "--json", s.id], capture_output=True, text=True,
                          env={**os.environ, "SESSIONDAG_HOME": str(state_dir)})
    assert show.returncode == 0, show.stderr
    assert ids[0] in {b["head_id"] for b in json.loads(show.stdout)}

    # another process opens the same thread and continues it
    r = subprocess.run([sys.executable, os.path.join(HERE, "lg_child.py"), str(state_dir), "calc"],
                       capture_output=True, text=True, timeout=120, cwd=os.path.dirname(HERE))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "2 + 3 = 5"
    saver = SessiondagSaver(state_dir)
    st = build(saver).get_state(cfg)
    assert texts(st)[-4:] == ["and once more", "", "5", "2 + 3 = 5"]
    saver.close()


@pytest.mark.anyio
async def test_async_saver_runs_the_graph(tmp_path):
    async with AsyncSessiondagSaver(tmp_path / "state") as saver:
        graph = build(saver)
        cfg = {"configurable": {"thread_id": "a1"}}
        out = await graph.ainvoke({"messages": [HumanMessage("what is 2 + 3?")]}, cfg)
        assert "__interrupt__" in out
        out = await graph.ainvoke(Command(resume="approve"), cfg)
        assert out["messages"][-1].content == "2 + 3 = 5"
        hist = [h async for h in graph.aget_state_history(cfg)]
        assert hist[0].values["messages"][-1].content == "2 + 3 = 5"
