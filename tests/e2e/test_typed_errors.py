"""Typed errors keep their own code on every path, also when raised inside a task group."""

import os

import pytest

from e2e_support import serving
from sessiondag.rpc.errors import APP_CODES
from sessiondag.store import SessionStore
from sessiondag_client import InvalidNodeError, InvalidParamsError, NotFoundError

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("branch_from", ["../x", "", "a\0b", "no-such-node"])
async def test_agent_prompt_bad_branch_from_is_a_typed_error(branch_from, tmp_path, workdir, check):
    script = tmp_path / "script.yaml"
    script.write_text("- text: hello\n  repeat: true\n")
    state = tmp_path / "state"
    env = dict(os.environ, SESSIONDAG_PROVIDER="scripted", SESSIONDAG_SCRIPT=str(script))
    async with serving(state, check, env) as (_, c):
        h = await c.open(working_dir=str(workdir))
        r = await c.agent_prompt(session_id=h.id, content="first")
        assert r["stop_reason"] == "end_turn"
        before = await c.get_branch(h.id)
        with pytest.raises((NotFoundError, InvalidNodeError, InvalidParamsError)) as ei:
            await c.agent_prompt(session_id=h.id, content="second", branch_from=branch_from)
        code = getattr(ei.value, "rpc_code", getattr(ei.value, "code", None))
        assert code != -32603 and (code in APP_CODES.values() or code == -32602), ei.value
        # nothing was left behind: no user node, head unchanged, the session still works
        assert [n.id for n in await c.get_branch(h.id)] == [n.id for n in before]
        r = await c.agent_prompt(session_id=h.id, content="third")
        assert r["stop_reason"] == "end_turn"
    s = SessionStore(str(state)).session(h.id)
    users = [n for n in s.graph.nodes.values() if n.role == "user" and n.output == "second"]
    assert users == []


async def test_a_bad_render_manifest_is_invalid_params_naming_it(state_dir, workdir, check):
    """A manifest the daemon cannot replay exactly (session/render's `manifest`) is bad input of the
    request: -32602 naming the param, not the generic sessiondag_error code."""
    async with serving(state_dir, check) as (_, c):
        h = await c.open(working_dir=str(workdir))
        u, _ = await c.append(h.id, {"role": "user", "name": "me", "output": "hi", "predecessor": "ROOT"})
        messages, manifest = await c.render(h.id, u.id)
        assert messages
        for bad in ({**manifest, "policy_version": 999},
                    {k: v for k, v in manifest.items() if k != "last_seq"}):
            with pytest.raises(InvalidParamsError) as ei:
                await c.render(h.id, u.id, manifest=bad)
            assert ei.value.code == -32602
            assert ei.value.data["param"] == "manifest", ei.value.data
        assert (await c.render(h.id, u.id, manifest=manifest))[0] == messages
