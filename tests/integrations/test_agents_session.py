"""SessiondagSession beyond the SDK's own suite: a real Runner.run with a tool against a loopback
OpenAI-compatible server from two processes, concurrent writers in several processes, what the
items become on the DAG (roles, tool-call pairing, rendering), pop and clear as forks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sessiondag import ROOT
from sessiondag.context.messages import render_messages
from sessiondag.integrations.agents import SessiondagSession
from sessiondag.store import SessionStore

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runtime"))
from loopback_openai import LoopbackOpenAI  # noqa: E402  (the runtime tests' loopback server)

CHILD = os.path.join(HERE, "agents_child.py")
pytestmark = pytest.mark.anyio


def child(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run([sys.executable, CHILD, *args], capture_output=True, text=True, timeout=timeout, env=env)


async def test_runner_with_a_tool_across_two_processes(tmp_path):
    state = str(tmp_path / "state")
    replies = [
        {"match": "what is 2 + 3", "tool_calls": [{"id": "call_add_1", "name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"match": "5", "text": "2 + 3 = 5"},
        {"match": "double", "text": "10"},
    ]
    with LoopbackOpenAI(replies) as srv:
        a = child("run", state, srv.base_url, "calc", "what is 2 + 3?")
        assert a.returncode == 0, a.stderr
        assert a.stdout.strip() == "2 + 3 = 5"
        b = child("run", state, srv.base_url, "calc", "now double it")
        assert b.returncode == 0, b.stderr
        assert b.stdout.strip() == "10"
    assert len(srv.requests) == 3 and all(r["path"].endswith("/chat/completions") for r in srv.requests)
    # the second process's model call saw the first process's whole turn, tool call and result included
    msgs = srv.requests[2]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert msgs[2]["tool_calls"][0]["id"] == "call_add_1" and msgs[3]["content"] == "5"

    session = SessiondagSession("calc", state)
    items = await session.get_items()
    assert [i.get("type") or i.get("role") for i in items] == [
        "user", "function_call", "function_call_output", "message", "user", "message"]
    s = session.session
    chain = s.get_branch()
    assert [c.role for c in chain] == ["user", "llm", "code", "llm", "user", "llm"]
    call, result = chain[1], chain[2]
    assert result.caller == call.id and result.metadata["tool_call_id"] == "call_add_1"
    assert result.name == "add" and result.input == {"a": 2, "b": 3} and result.output == "5"
    rendered, _ = render_messages(s, None, format="openai")
    assert [m["role"] for m in rendered] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert rendered[1]["tool_calls"][0]["function"]["name"] == "add"
    assert rendered[2] == {"role": "tool", "tool_call_id": "call_add_1", "content": "5"}
    assert rendered[-1]["content"] == "10"
    # each process folded its writes into git when it closed the session
    git = ["git", "--git-dir", os.path.join(s.path, "git")]
    assert len(subprocess.run(git + ["log", "--oneline"], capture_output=True, text=True, check=True).stdout.splitlines()) >= 2
    subprocess.run(git + ["fsck", "--strict"], capture_output=True, check=True)
    # and the CLI shows it like a session of our own runtime
    cli = os.path.join(os.path.dirname(sys.executable), "sessiondag")
    env = {**os.environ, "SESSIONDAG_HOME": state}
    show = subprocess.run([cli, "sessions", "show", s.id], capture_output=True, text=True, env=env)
    assert show.returncode == 0 and "nodes        6" in show.stdout, show.stdout + show.stderr
    log = subprocess.run([cli, "sessions", "log", s.id], capture_output=True, text=True, env=env)
    assert log.returncode == 0 and "what is 2 + 3?" in log.stdout and "2 + 3 = 5" in log.stdout
    session.close()


async def test_writers_in_several_processes_interleave_whole_batches(tmp_path):
    state = str(tmp_path / "state")
    procs = [subprocess.Popen([sys.executable, CHILD, "write", state, "shared", tag, "50"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in ("A", "B")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    session = SessiondagSession("shared", state)
    items = await session.get_items()
    assert len(items) == 100
    for tag in ("A", "B"):  # nothing lost, each writer's order kept
        assert [i["content"] for i in items if i["content"].startswith(tag)] == [f"{tag} {k}" for k in range(50)]
    assert len(session.session.list_branches()) == 1  # one linear history, never split
    session.close()


async def test_pop_and_clear_are_forks_never_deletions(tmp_path):
    session = SessiondagSession("s", tmp_path / "state")
    await session.add_items([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
    popped = await session.pop_item()
    assert popped == {"role": "assistant", "content": "two"}
    await session.add_items([{"role": "assistant", "content": "two, edited"}])
    assert [i["content"] for i in await session.get_items()] == ["one", "two, edited"]
    s = session.session
    assert len(s.list_branches()) == 2  # the popped item is the tip of a side branch
    assert any(s.get_node(b.head_id).output == "two" for b in s.list_branches())
    old_head = s.head_id
    await session.clear_session()
    assert await session.get_items() == [] and s.head_id == ROOT
    await session.add_items([{"role": "user", "content": "fresh start"}])
    assert [i["content"] for i in await session.get_items()] == ["fresh start"]
    assert [c.output for c in s.get_branch(old_head)] == ["one", "two, edited"]  # still reachable
    assert await SessiondagSession("never-written", tmp_path / "state").pop_item() is None
    session.close()


@pytest.mark.parametrize("how", ["reset by its store", "removed by another process"])
async def test_a_session_dropped_under_the_adapter_starts_again_at_the_next_write(tmp_path, how):
    store = SessionStore(tmp_path / "state")
    session = SessiondagSession("s", store, commit_every=0)
    await session.add_items([{"role": "user", "content": "before"}])
    sid, path = session.session.id, session.session.path
    if how == "reset by its store":
        assert store.reset_session(sid)
    else:  # `rm -rf` of the session directory, as a user (or another tool) would
        subprocess.run(["rm", "-rf", path], check=True)
    assert await session.get_items() == []
    await session.add_items([{"role": "user", "content": "after"}, {"role": "assistant", "content": "again"}])
    assert [i["content"] for i in await session.get_items()] == ["after", "again"]
    reopened = SessionStore(tmp_path / "state").session(sid)  # on disk, not only in this process
    assert [c.output for c in reopened.get_branch()] == ["after", "again"]
    session.close()
    store.close()


async def test_items_round_trip_exactly_and_bad_items_write_nothing(tmp_path):
    session = SessiondagSession("odd id / with spaces", tmp_path / "state")
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "data:x"}]},
        {"role": "system", "content": "be brief"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]},
        {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
         "content": [{"type": "output_text", "text": "a", "annotations": []}, {"type": "output_text", "text": "b", "annotations": []}]},
        {"type": "function_call_output", "call_id": "orphan", "output": "no call for me"},
        {"type": "function_call", "call_id": "c9", "name": "f", "arguments": "not json"},
        {"type": "function_call_output", "call_id": "c9", "output": [{"type": "input_text", "text": "rich"}]},
    ]
    await session.add_items(items)
    assert await session.get_items() == items
    assert await session.get_items(limit=2) == items[-2:]
    before = len(session.session.graph.nodes)
    with pytest.raises(TypeError):
        await session.add_items([{"role": "user", "content": "ok"}, {"role": "user", "content": object()}])
    with pytest.raises(TypeError):
        await session.add_items(["not a dict"])
    assert len(session.session.graph.nodes) == before and await session.get_items() == items
    assert SessionStore(tmp_path / "state").list_sessions()[0]["session_id"].startswith("ag-h-")
    session.close()


def test_any_sequence_of_operations_matches_a_list_and_loses_no_node(tmp_path_factory):
    """Model-based: add / pop / clear / get(limit) on SessiondagSession behave exactly like the
    SDK's contract on a plain list, while the DAG only ever grows (pops and clears are forks)."""
    import asyncio

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    op = st.one_of(
        st.tuples(st.just("add"), st.lists(st.sampled_from(["user", "assistant", "call", "out"]), min_size=1, max_size=3)),
        st.tuples(st.just("pop"), st.none()),
        st.tuples(st.just("clear"), st.none()),
        st.tuples(st.just("get"), st.integers(0, 5)),
    )

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(ops=st.lists(op, max_size=25))
    def run(ops):
        session = SessiondagSession("m", tmp_path_factory.mktemp("m"), commit_every=3)
        model: list = []
        written = 0

        async def go():
            nonlocal written
            for n, (kind, arg) in enumerate(ops):
                if kind == "add":
                    batch = []
                    for k, what in enumerate(arg):
                        if what in ("user", "assistant"):
                            batch.append({"role": what, "content": f"{n}.{k}"})
                        elif what == "call":
                            batch.append({"type": "function_call", "call_id": f"c{n}", "name": "f", "arguments": "{}"})
                        else:
                            batch.append({"type": "function_call_output", "call_id": f"c{n}", "output": f"r{n}.{k}"})
                    await session.add_items(batch)
                    model.extend(batch)
                    written += len(batch)
                elif kind == "pop":
                    assert await session.pop_item() == (model.pop() if model else None)
                elif kind == "clear":
                    await session.clear_session()
                    model.clear()
                else:
                    assert await session.get_items(arg) == (model[-arg:] if arg else [])
                assert await session.get_items() == model
            if written:
                assert len(session.session.graph.nodes) - 1 == written  # nothing was ever deleted

        asyncio.run(go())
        session.close()

    run()


async def test_the_sessions_age_like_the_applications(tmp_path):
    """The Agents session's store has the application's commit hooks (context/store_factory.py):
    past the tail of user turns the aging boundary moves, on a store it builds and on one handed in
    bare; the LangGraph saver's goes without (tests/test_settings_edge.py BARE_STORES says why)."""
    from sessiondag.context.aging import AGED_KEY
    from sessiondag.integrations.langgraph import SessiondagSaver

    def chat(session):
        for i in range(8):   # more user turns than the default tail (4)
            session.add_items_sync([{"role": "user", "content": f"q{i}"},
                                    {"role": "assistant", "content": f"a{i}"}])
        session.commit()
        return session.session.graph.extra.get(AGED_KEY, 0)

    built = SessiondagSession("aging", str(tmp_path / "built"), commit_every=1)
    assert chat(built) > 0
    bare = SessionStore(str(tmp_path / "bare"))
    assert chat(SessiondagSession("aging", bare, commit_every=1)) > 0
    assert bare.commit_hooks and SessiondagSaver(str(tmp_path / "lg")).store.commit_hooks == []
