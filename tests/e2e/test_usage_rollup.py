"""session/usage against a real daemon: the ledger over the wire, validated against rpc_schema,
kept current as nodes land and are updated (including by another process)."""

import contextlib

import pytest

from sessiondag_client import InvalidParamsError, NotFoundError, ReplayRefusedError, connect_unix

pytestmark = pytest.mark.anyio


def _md(i, o, pusd=None):
    md = {"gen_ai.usage.input_tokens": i, "gen_ai.usage.output_tokens": o, "provider": "p",
          "gen_ai.request.model": "m"}
    md["sessiondag.cost"] = {"usd": pusd / 1e12, "pusd": pusd} if pusd is not None else "unknown"
    return md


async def test_usage_over_rpc(socket_daemon, workdir, check):
    c = await connect_unix(socket_daemon.socket)
    c.observer = check
    try:
        h = await c.open(working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        a, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "x", "caller": u.id, "predecessor": u.id,
                                     "metadata": _md(10, 2, 5_000_000)})
        r = await c.usage(h.id, "node")
        assert r["total"]["input_tokens"] == 10 and r["total"]["cost_usd"] == 5e-6
        # a fork from the user node: a second branch with its own segment
        b, _ = await c.append(h.id, {"role": "llm", "name": "m", "output": "y", "caller": u.id, "predecessor": u.id,
                                     "status": "running", "metadata": {"provider": "p"}})
        await c.update(h.id, b.id, status="completed", metadata=_md(3, 1))
        rows = (await c.usage(h.id))["rows"]
        assert sorted((x["head_id"], x["input_tokens"]) for x in rows) == sorted([(a.id, 10), (b.id, 3)])
        scoped = await c.usage(h.id, "model", head_id=b.id)
        assert scoped["total"]["input_tokens"] == 3 and scoped["total"]["cost_usd"] is None
        assert scoped["total"]["unpriced_calls"] == 1
        with pytest.raises(InvalidParamsError):
            await c.call("session/usage", {"session_id": h.id, "by": "colour"})
        with pytest.raises(NotFoundError):
            await c.usage(h.id, head_id="nope")
    finally:
        await c.aclose()


@contextlib.asynccontextmanager
async def scripted_session(daemon_factory, state_dir, workdir, tmp_path, check, script: str):
    """A client of a fresh socket daemon and a session of it on the scripted model `script` (JSON)."""
    path = tmp_path / "s.json"
    path.write_text(script)
    d = daemon_factory("--socket", "--state-dir", str(state_dir))
    c = await connect_unix(d.socket)
    c.observer = check
    try:
        yield c, await c.open(working_dir=str(workdir), provider="scripted", script=str(path))
    finally:
        await c.aclose()


async def test_replay_and_compare_over_rpc(daemon_factory, state_dir, workdir, tmp_path, check):
    async with scripted_session(daemon_factory, state_dir, workdir, tmp_path, check,
                                '[{"match": "again", "text": "second answer"}, {"text": "first answer"}]') as (c, h):
        r = await c.agent_prompt(h.id, "hello")
        orig = r["head_id"]
        msgs, _ = await c.render(h.id, r["user_node_id"])
        last = len(msgs) - 1  # the user message, as the original call sent it
        out = await c.replay(h.id, orig, system="be brief", name="brief",
                             edits=[{"message_index": last, "content": "again"}])
        assert out["text"] == "second answer" and out["branch"] == "brief"
        assert out["node"]["metadata"]["replay_of"] == orig
        assert out["node"]["metadata"]["replay"] == {"system": "be brief", "model": "scripted",
                                                     "edits": [{"message_index": last, "content": "again"}]}
        cmp = await c.compare(h.id, orig, out["node"]["id"])
        assert cmp["first_divergence"]["why"] == "the answers differ" and cmp["shared"] >= 2
        branches = {b.head_id: b for b in await c.list_branches(h.id)}
        assert branches[out["node"]["id"]].name == "brief"
        with pytest.raises(ReplayRefusedError) as e:
            await c.replay(h.id, r["user_node_id"])
        assert e.value.rpc_data["reason"] == "not_a_model_call"
        rows = (await c.usage(h.id, "branch"))["rows"]
        assert {x["head_id"] for x in rows} == {orig, out["node"]["id"]}


async def test_replay_branch_recorded_tools_over_rpc(daemon_factory, state_dir, workdir, tmp_path, check):
    (workdir / "a.txt").write_text("alpha")
    script = ('[{"text": "", "tool_calls": [{"id": "t", "name": "read_file", "arguments": {"path": "a.txt"}}]},'
              ' {"text": "it says alpha"}]')
    async with scripted_session(daemon_factory, state_dir, workdir, tmp_path, check, script) as (c, h):
        r = await c.agent_prompt(h.id, "read a.txt")
        out = await c.replay_branch(h.id, r["user_node_id"], "recorded_tools", system="Be exact.", name="exact")
        assert out["stopped"] is None and out["matched_tools"] == 1 and out["calls"] == 2
        assert out["branch"] == "exact" and (await c.list_branches(h.id))
        cmp = await c.compare(h.id, r["head_id"], out["head_id"])
        assert cmp["first_divergence"] is None  # same answers, same tool calls
        assert (await c.usage(h.id, "node", head_id=out["head_id"]))["total"]["calls"] == 2
