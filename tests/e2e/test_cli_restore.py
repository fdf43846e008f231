"""`sessiondag sessions restore` on a session a running daemon holds goes through that daemon, so its
subscribers hear of it (session/did_change {kind: restore}) — a real daemon on a socket, the CLI in
a process of its own, real files; `--before` puts back the files as they were just before a tool call."""

import os
import subprocess
import sys

import anyio
import pytest

from e2e_support import next_change, serving

pytestmark = pytest.mark.anyio
CLI = [sys.executable, "-c", "import sys; from sessiondag.cli import main; sys.exit(main())"]


async def test_a_cli_restore_is_announced_by_the_daemon(tmp_path, workdir, check):
    script = tmp_path / "script.yaml"
    script.write_text(
        "- match: one\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"one\\n\"}}]\n"
        "- match: two\n  tool_calls: [{name: write_file, arguments: {path: f.txt, content: \"two\\n\"}}]\n"
        "- repeat: true\n  text: done\n")
    state = tmp_path / "state"
    env = {**os.environ, "SESSIONDAG_PROVIDER": "scripted", "SESSIONDAG_SCRIPT": str(script),
           "SESSIONDAG_HOME": str(state), "SESSIONDAG_ALLOW": "write"}
    async with serving(state, check, env) as (_, c):

        async def grant(params):
            return {"granted": True}
        c.on_request("agent/request_permission", grant)
        h = await c.open(working_dir=str(workdir))
        r1 = await c.agent_prompt(h.id, "one")
        r2 = await c.agent_prompt(h.id, "two")
        await c.subscribe(h.id)

        def cli(*args):
            return subprocess.run([*CLI, "sessions", "restore", h.id, *args], env=env, capture_output=True,
                                  text=True, timeout=120)

        out = await anyio.to_thread.run_sync(cli, r1["head_id"])
        assert out.returncode == 0, out.stderr
        assert (workdir / "f.txt").read_text() == "one\n" and "undo with" in out.stdout
        ch = await next_change(c, h.id, "restore")
        assert ch["paths"] == ["f.txt"] and ch["node_id"] == r1["head_id"]
        # just before turn two's write_file: the file as that call found it
        (w2,) = [n for n in (await c.get_branch(h.id, r2["head_id"])) if n.name == "write_file"][1:]
        await anyio.to_thread.run_sync(cli, r2["head_id"])
        await next_change(c, h.id, "restore")
        assert (workdir / "f.txt").read_text() == "two\n"
        out = await anyio.to_thread.run_sync(cli, w2.id, "--before")
        assert out.returncode == 0, out.stderr
        assert (workdir / "f.txt").read_text() == "one\n"
        assert (await next_change(c, h.id, "restore"))["node_id"] == w2.id
        # a refusal through the daemon is the same typed refusal: exit 1, the dirty paths named
        (workdir / "mine.txt").write_text("mine\n")
        out = await anyio.to_thread.run_sync(cli, r2["head_id"])
        assert out.returncode == 1 and "mine.txt" in out.stderr
