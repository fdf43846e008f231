"""The daemon side of the client's terminal, over the daemon's own protocol: agent/prompt with
`client_terminal` makes run_command send `agent/run_in_terminal` to the client that started the
turn, its params and the answer checked against rpc_schema/ (as test_client_fs_rpc.py checks
agent/read_text_file): the argv is the sandboxed command, the answer becomes the tool's output,
and an answer outside the schema fails the tool call instead of being taken for a result."""

from __future__ import annotations

import asyncio

import jsonschema
import pytest
from sessiondag.rpc import schema as rpc_schema
from sessiondag_client.connecting import spawn_stdio

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: run it
  repeat: true
  tool_calls: [{name: run_command, arguments: {command: "echo out; exit 4", timeout: 7}}]
- repeat: true
  text: ok
"""


async def test_run_in_terminal_params_and_answers_follow_the_schema(acp_env):
    acp_env.script.write_text(SCRIPT)
    c = await spawn_stdio(str(acp_env.state), env=acp_env.env)
    asked: list[dict] = []
    answers: list[object] = []

    async def terminal(params):   # what an editor's terminal does: run the argv it is given, in cwd
        jsonschema.validate(params, rpc_schema.params_schema("agent/run_in_terminal"))
        asked.append(params)
        if answers:
            return answers.pop(0)
        p = await asyncio.create_subprocess_exec(params["command"], *params["args"], cwd=params["cwd"],
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await p.communicate()
        res = {"output": out.decode(), "exit_code": p.returncode, "signal": None, "truncated": False,
               "timed_out": False}
        jsonschema.validate(res, rpc_schema.result_schema("agent/run_in_terminal"))
        return res

    async def grant(params):
        return {"granted": True}
    c.on_request("agent/run_in_terminal", terminal)
    c.on_request("agent/request_permission", grant)
    try:
        h = await c.open(working_dir=str(acp_env.work))
        r = await c.agent_prompt(session_id=h.id, content="run it", client_terminal=True)
        jsonschema.validate(r, rpc_schema.result_schema("agent/prompt"))
        (p,) = asked
        assert p["session_id"] == h.id and p["timeout"] == 7 and p["args"][-1] == "echo out; exit 4"
        assert p["cwd"] == str(acp_env.work.resolve())
        assert p["command"] != "echo" and len(p["args"]) > 1   # the command inside the daemon's sandbox
        bad = [{"exit_code": 0}, "out", {"output": 3}]   # no output, not an object, output not a string
        for b in bad:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(b, rpc_schema.result_schema("agent/run_in_terminal"))
        answers.extend(bad)
        for _ in bad:
            await c.agent_prompt(session_id=h.id, content="run it", client_terminal=True)
        await c.agent_prompt(session_id=h.id, content="run it")   # no client_terminal: the daemon runs it
        nodes = [n for n in await c.get_branch(h.id) if n.name == "run_command"]
    finally:
        await c.aclose()
    assert len(asked) == 4
    assert (nodes[0].status, nodes[0].output) == ("completed", "exit code 4\nout\n")
    for n in nodes[1:4]:
        assert n.status == "error" and "the client's terminal answer is not {output: string" in n.output
    assert (nodes[4].status, nodes[4].output) == ("completed", "exit code 4\nout\n")
