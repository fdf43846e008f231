"""An opted-in resume into a renamed working dir moves the session there at every entry point (issue
19 item 13): after `mv proj proj-renamed`, the library's `run_task(..., allow_working_dir_mismatch=True)`
and a daemon's `session/open {allow_working_dir_mismatch: true}` + `agent/prompt` run their tools in
the new dir, the handle names it, and the move is recorded as a rebind (as the CLI does)."""

import os

import anyio
import pytest
import yaml

from e2e_support import DaemonProc
from sessiondag.runtime import Runtime, run_task
from sessiondag.runtime.providers.scripted import ScriptedProvider
from sessiondag.store import SessionStore
from sessiondag_client import connect_unix

REPLIES = [{"match": "READ", "text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
            "repeat": True},
           {"match": "the-file-content", "text": "It says the-file-content.", "repeat": True}]


@pytest.fixture
def proj(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    (d / "a.txt").write_text("the-file-content\n")
    return d


def read_tool_outputs(store: SessionStore, sid: str, head: str) -> list:
    s = store.session(sid)
    s.refresh()
    g = s.graph
    return [(c.status, str(c.output)) for c in g.nodes.values() if c.name == "read_file" and c.caller in
            {n.id for n in s.get_branch(head)}]


def assert_rebound(store: SessionStore, sid: str, old: str, new: str) -> None:
    s = store.session(sid)
    assert s.info["working_dir"] == new
    with open(os.path.join(s.path, "session.json")) as f:
        assert yaml.safe_load(f)["working_dir"] == new  # durable, not only in memory
    assert [(x["from"], x["to"]) for x in s.graph.extra["working_dir_rebinds"]] == [(old, new)]


def test_library_resume_into_a_renamed_dir_rebinds(tmp_path, proj):
    state = str(tmp_path / "state")
    rt = Runtime(ScriptedProvider(REPLIES), subagents=False)
    store = SessionStore(state)
    first = run_task("READ it", session_id="lib", working_dir=str(proj), store=store, runtime=rt)
    assert first.stop_reason == "end_turn"
    renamed = tmp_path / "proj-renamed"
    os.rename(proj, renamed)
    second = run_task("READ it again", session_id="lib", working_dir=str(renamed), store=store, runtime=rt,
                      allow_working_dir_mismatch=True)
    assert second.stop_reason == "end_turn", second.error
    assert read_tool_outputs(store, "lib", second.head_id)[-1][0] == "completed"
    assert_rebound(store, "lib", str(proj), str(renamed))
    store.close()


def test_rpc_open_into_a_renamed_dir_rebinds_and_prompt_runs_there(tmp_path, proj):
    state = str(tmp_path / "state")
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump(REPLIES))
    env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script))
    d = DaemonProc(["--socket", "--state-dir", state], env=env)
    renamed = tmp_path / "proj-renamed"

    async def run() -> dict:
        async with await connect_unix(d.socket) as c:
            await c.open("rpc", working_dir=str(proj))
            assert (await c.agent_prompt(session_id="rpc", content="READ it"))["stop_reason"] == "end_turn"
            os.rename(proj, renamed)
            h = await c.open("rpc", working_dir=str(renamed), allow_working_dir_mismatch=True)
            assert h.working_dir == str(renamed)
            return await c.agent_prompt(session_id="rpc", content="READ it again")
    try:
        r = anyio.run(run)
    finally:
        d.stop()
    assert r["stop_reason"] == "end_turn", r
    store = SessionStore(state)
    assert read_tool_outputs(store, "rpc", r["head_id"])[-1][0] == "completed"
    assert_rebound(store, "rpc", str(proj), str(renamed))
    store.close()
