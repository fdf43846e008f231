"""Malformed ACP input over raw pipes: every bad line gets a JSON-RPC error and the endpoint keeps
serving; stdout carries nothing but protocol lines."""

from __future__ import annotations

import asyncio
import json

import pytest
from support import ACP_CMD

pytestmark = pytest.mark.anyio


class Raw:
    def __init__(self, proc):
        self.proc = proc
        self.lines: list[dict] = []

    async def send(self, line: str | bytes) -> None:
        self.proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        await self.proc.stdin.drain()

    async def request(self, rid, method, params) -> None:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))

    async def next(self) -> dict:
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        assert line, "the ACP process closed stdout"
        msg = json.loads(line)   # stdout is protocol only: every line is JSON
        self.lines.append(msg)
        return msg

    async def answer(self, rid) -> dict:
        while True:
            msg = await self.next()
            if msg.get("id") == rid and "method" not in msg:
                return msg


async def test_malformed_input_gets_errors_and_the_endpoint_keeps_serving(acp_env):
    err = open(acp_env.tmp / "acp-raw.log", "wb")
    proc = await asyncio.create_subprocess_exec(ACP_CMD[0], *acp_env.args(), stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=err, env=acp_env.env)
    raw = Raw(proc)
    try:
        await raw.send("this is not json {")
        m = await raw.next()
        assert m["id"] is None and m["error"]["code"] == -32700
        await raw.send(b"\xff\xfe not utf-8")
        assert (await raw.next())["error"]["code"] == -32700
        await raw.send("[1, 2, 3]")
        m = await raw.next()
        assert m["id"] is None and m["error"]["code"] == -32600
        await raw.send('{"jsonrpc": "2.0", "id": 7, "method": 42}')
        m = await raw.next()
        assert m["id"] == 7 and m["error"]["code"] == -32600

        await raw.request(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        init = (await raw.answer(1))["result"]
        assert init["protocolVersion"] == 1 and init["agentCapabilities"]["loadSession"] is True
        await raw.request(2, "initialize", {"protocolVersion": 99})
        assert (await raw.answer(2))["result"]["protocolVersion"] == 1   # negotiated down to ours

        await raw.request(3, "session/teleport", {})
        assert (await raw.answer(3))["error"]["code"] == -32601
        await raw.request(4, "session/new", {"cwd": 17, "mcpServers": []})
        assert (await raw.answer(4))["error"]["code"] == -32602
        await raw.request(5, "session/new", {"cwd": "not/absolute", "mcpServers": []})
        m = await raw.answer(5)
        assert m["error"]["code"] == -32602 and m["error"]["data"]["field"] == "cwd"
        await raw.request(6, "session/prompt", {"sessionId": "s-unknown", "prompt": [{"type": "text", "text": "x"}]})
        m = await raw.answer(6)
        assert m["error"]["code"] == -32014 and m["error"]["data"]["kind"] == "not_found"
        await raw.request(8, "session/prompt", {"sessionId": "s-unknown", "prompt": "not a list"})
        assert (await raw.answer(8))["error"]["code"] == -32602
        await raw.send('{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-unknown"}}')

        await raw.request(9, "session/new", {"cwd": str(acp_env.work), "mcpServers": []})
        sid = (await raw.answer(9))["result"]["sessionId"]
        acp_env.script.write_text("- text: still serving\n")
        await raw.request(10, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
        res = (await raw.answer(10))["result"]
        assert res["stopReason"] == "end_turn"
        chunks = [m["params"]["update"] for m in raw.lines if m.get("method") == "session/update"]
        assert "".join(u["content"]["text"] for u in chunks if u["sessionUpdate"] == "agent_message_chunk") \
            == "still serving"
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
        err.close()
    assert proc.returncode == 0
    assert "acp ready" in (acp_env.tmp / "acp-raw.log").read_text()
