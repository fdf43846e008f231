"""run_command through the client's terminal (`terminal/*`) when the client offers terminals: the
client runs the very argv the daemon would (the command inside its sandbox), the tool call shows
the terminal, a timeout kills it, and the output and exit status come back as the tool's result.
The client here is the Python SDK's client side with a real terminal (terminal_client.py)."""

from __future__ import annotations

import pytest
from acp import text_block
from support import RecordingClient, acp_session, daemon_branch

pytestmark = pytest.mark.anyio


def script(outside):
    return f"""\
- match: run it
  tool_calls: [{{name: run_command, arguments: {{command: "echo hello from the terminal; echo err >&2; exit 3"}}}}]
- match: exit code 3
  text: it failed with 3
- match: escape
  tool_calls: [{{name: run_command, arguments: {{command: "touch {outside}"}}}}]
- match: "exit code"
  text: ran
- match: sleep
  tool_calls: [{{name: run_command, arguments: {{command: "sleep 30", timeout: 1}}}}]
- match: timed out
  text: too slow
"""


async def test_run_command_runs_in_the_clients_terminal_inside_the_sandbox(acp_env, tmp_path):
    outside = tmp_path / "outside.txt"
    client = RecordingClient(terminal=True)
    client.permission_answers = ["allow_always"]
    async with acp_session(acp_env, script(outside), client=client) as (conn, client, sid):
        await conn.prompt(session_id=sid, prompt=[text_block("run it")])
        assert client.agent_text(sid) == "it failed with 3"
        (made,) = client.terminals.created
        assert made["cwd"] == str(acp_env.work) and made["args"][-1].endswith("exit 3")
        (start,) = client.of("tool_call", sid)
        shown = [c.terminal_id for u in client.of("tool_call_update", sid) if u.tool_call_id == start.tool_call_id
                 for c in u.content or () if c.type == "terminal"]
        assert shown == [made["id"]] and client.terminals.released == [made["id"]]
        final = client.of("tool_call_update", sid)[-1]
        assert final.status == "completed" and final.raw_output["output"] == \
            "exit code 3\nhello from the terminal\nerr\n"
        await conn.prompt(session_id=sid, prompt=[text_block("escape")])   # the sandbox holds there too
        assert len(client.terminals.created) == 2 and not outside.exists()
        client.clear()
        await conn.prompt(session_id=sid, prompt=[text_block("sleep")])
        assert client.agent_text(sid) == "too slow"
        third = client.terminals.created[2]["id"]
        assert client.terminals.killed == [third] and client.terminals.released[-1] == third
    runs = [n for n in await daemon_branch(acp_env, sid) if n.name == "run_command"]
    assert runs[-1].output.startswith("timed out after 1s (killed)")
    assert runs[0].metadata["sandbox"]["mode"] == "workspace-write"
