"""Malformed ACP input over raw pipes: every bad line gets a JSON-RPC error and the endpoint keeps
serving; stdout carries nothing but protocol lines."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from hypothesis import strategies as st
from support import ACP_CMD


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


@contextlib.asynccontextmanager
async def raw_acp(env):
    """A spawned `sessiondag acp` on raw pipes (stderr to acp-raw.log); stdin is closed and the
    process awaited at the end."""
    err = open(env.tmp / "acp-raw.log", "wb")
    proc = await asyncio.create_subprocess_exec(ACP_CMD[0], *env.args(), stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=err, env=env.env)
    try:
        yield Raw(proc)
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
        err.close()


@pytest.mark.anyio
async def test_malformed_input_gets_errors_and_the_endpoint_keeps_serving(acp_env):
    async with raw_acp(acp_env) as raw:
        proc = raw.proc
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
        assert m["error"]["code"] == -32002 and m["error"]["data"]["kind"] == "not_found"
        await raw.request(8, "session/prompt", {"sessionId": "s-unknown", "prompt": "not a list"})
        assert (await raw.answer(8))["error"]["code"] == -32602
        await raw.send('{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-unknown"}}')
        # an ACP-transport MCP server: this agent advertises http and sse only, so it is refused by name
        await raw.request(7, "session/new", {"cwd": str(acp_env.work), "mcpServers": [
            {"type": "acp", "name": "editor-tools", "serverId": "srv-1"}]})
        m = await raw.answer(7)
        assert m["error"]["code"] == -32602 and m["error"]["data"]["field"] == "mcpServers"
        assert "editor-tools" in m["error"]["message"] and "acp" in m["error"]["message"]

        await raw.request(9, "session/new", {"cwd": str(acp_env.work), "mcpServers": []})
        sid = (await raw.answer(9))["result"]["sessionId"]
        acp_env.script.write_text("- text: still serving\n")
        await raw.request(10, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
        res = (await raw.answer(10))["result"]
        assert res["stopReason"] == "end_turn"
        chunks = [m["params"]["update"] for m in raw.lines if m.get("method") == "session/update"]
        assert "".join(u["content"]["text"] for u in chunks if u["sessionUpdate"] == "agent_message_chunk") \
            == "still serving"
    assert proc.returncode == 0
    assert "acp ready" in (acp_env.tmp / "acp-raw.log").read_text()


@pytest.mark.anyio
async def test_a_deeply_nested_line_is_a_parse_error_and_the_endpoint_keeps_serving(acp_env):
    """2,000 `[` then 2,000 `]` on one line (the stdlib parser's RecursionError killed the agent):
    answered -32700, like any line the daemon's parser refuses; so is a request whose params nest
    past the depth a node field may hold (core/depth.py); the next request is served."""
    err = open(acp_env.tmp / "acp-deep.log", "wb")
    proc = await asyncio.create_subprocess_exec(ACP_CMD[0], *acp_env.args(), stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=err, env=acp_env.env)
    raw = Raw(proc)
    try:
        await raw.send("[" * 2000 + "]" * 2000)
        m = await raw.next()
        assert m["id"] is None and m["error"]["code"] == -32700
        deep = "[" * 600 + "]" * 600
        await raw.send('{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"x": %s}}' % deep)
        m = await raw.next()
        assert m["error"]["code"] == -32700 and m["error"]["data"]["max_depth"] == 200
        await raw.request(2, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert (await raw.answer(2))["result"]["protocolVersion"] == 1
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
        err.close()
    assert proc.returncode == 0


class Lines:
    """Blocking line reader with a deadline over a pipe (select), for the Hypothesis test below."""

    def __init__(self, f):
        self.f = f
        self.buf = b""

    def next(self, timeout: float = 30.0) -> dict:
        import os
        import select
        import time
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "no answer from sessiondag acp"
            r, _, _ = select.select([self.f], [], [], left)
            if r:
                chunk = os.read(self.f.fileno(), 65536)
                assert chunk, "sessiondag acp closed stdout"
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)   # stdout is protocol only


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids,
                                                                                      max_size=3),
                           max_leaves=8)
junk_lines = st.one_of(
    st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ")),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]), json_values,
                    max_size=5).map(lambda d: json.dumps(d).encode()),
    st.builds(lambda m, p, i: json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}).encode(),
              # (not session/new|load|resume: a junk `cwd: "/"` would bind a session to the root dir)
              st.sampled_from(["session/prompt", "session/list", "session/close", "session/cancel", "initialize",
                               "_sessiondag/graph", "_sessiondag/fork", "session/set_mode", "authenticate"]),
              json_values, st.integers(1000, 10**6)),
)


def test_any_line_leaves_the_endpoint_serving(acp_env):
    """Whatever one line holds, the next well-formed request is still answered (and stdout stays
    JSON). Junk that happens to be a request gets its own answer first; only ids >= 1000 are junk."""
    import subprocess
    from hypothesis import HealthCheck, given, settings

    proc = subprocess.Popen([ACP_CMD[0], *acp_env.args()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=open(acp_env.tmp / "acp-fuzz.log", "wb"), env=acp_env.env, bufsize=0)
    lines = Lines(proc.stdout)
    probe = iter(range(1, 1000))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(junk_lines)
    def one_line(line: bytes) -> None:
        proc.stdin.write(line + b"\n")
        rid = next(probe)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "initialize",
                                     "params": {"protocolVersion": 1}}).encode() + b"\n")
        while True:
            msg = lines.next()
            if msg.get("id") == rid:
                assert msg["result"]["protocolVersion"] == 1
                return
            assert "method" in msg or "error" in msg or isinstance(msg.get("id"), int) and msg["id"] >= 1000
    try:
        one_line()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
