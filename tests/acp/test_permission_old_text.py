"""A write's permission question carries the file's old text, read by the daemon through the
tools' confinement (workspace/beneath.py: no symlink leading out, no FIFO, size-bounded), so the
ACP adapter — which may import nothing but the wire — reads no file itself (issue 19, item 3)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import jsonschema
import pytest
import sessiondag.acp
from sessiondag.rpc import schema as rpc_schema
from sessiondag_client.connecting import spawn_stdio

pytestmark = pytest.mark.anyio

SCRIPT = """\
- match: overwrite
  tool_calls: [{name: write_file, arguments: {path: inside/notes.txt, content: new}}]
- match: create
  tool_calls: [{name: write_file, arguments: {path: fresh.txt, content: new}}]
- match: edit
  tool_calls: [{name: edit_file, arguments: {path: real/notes.txt, old: old, new: edited}}]
- match: big
  tool_calls: [{name: write_file, arguments: {path: big.txt, content: small}}]
- match: outside
  tool_calls: [{name: write_file, arguments: {path: out/secret.txt, content: x}}]
- repeat: true
  text: ok
"""


async def test_the_daemon_sends_a_writes_old_text_through_the_tools_confinement(acp_env, tmp_path):
    acp_env.script.write_text(SCRIPT)
    w = acp_env.work
    (w / "real").mkdir()
    (w / "real" / "notes.txt").write_text("old text\n")
    os.symlink("real", w / "inside")                 # a link that stays inside: followed
    (w / "big.txt").write_bytes(b"x" * ((1 << 20) + 1))
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "secret.txt").write_text("do not show me")
    os.symlink(tmp_path / "secret", w / "out")       # a link that leads out: refused, nothing asked
    c = await spawn_stdio(str(acp_env.state), env=acp_env.env)
    asked: list[dict] = []

    async def answer(params):
        jsonschema.validate(params, rpc_schema.params_schema("agent/request_permission"))
        asked.append(params["detail"])
        return {"granted": False}
    c.on_request("agent/request_permission", answer)
    try:
        h = await c.open(working_dir=str(w))
        for prompt in ("overwrite", "create", "edit", "big", "outside"):
            await c.agent_prompt(session_id=h.id, content=prompt)
    finally:
        await c.aclose()
    assert asked == [{"tool": "write_file", "path": "inside/notes.txt", "old_text": "old text\n"},
                     {"tool": "write_file", "path": "fresh.txt", "old_text": None},
                     {"tool": "edit_file", "path": "real/notes.txt", "old_text": "old text\n"},
                     {"tool": "write_file", "path": "big.txt"}]   # over 1 MiB: no old text
    assert (tmp_path / "secret" / "secret.txt").read_text() == "do not show me"


def test_the_acp_adapter_opens_no_file():
    """Only the stdio transport touches file descriptors; a diff's old text comes from the daemon."""
    calls = []
    for f in sorted(Path(sessiondag.acp.__file__).parent.glob("*.py")):
        if f.name == "transport.py":
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
                if name in ("open", "fdopen", "read_text", "read_bytes", "scandir", "listdir"):
                    calls.append(f"{f.name}:{node.lineno}: {name}")
    assert calls == []
