"""Hypothesis fuzz against a live daemon: random bytes, random JSON, random params (≥ 2,000 frames).

Afterwards the daemon still answers and every session passes `git fsck`. Every answer to a random
request is an error object from rpc_schema (or a schema-valid result), never an internal error.
"""

import json
import os
import socket

import jsonschema
import orjson
import pytest
from functools import lru_cache

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sessiondag.rpc import codec
from sessiondag.rpc import schema as rpc_schema
from sessiondag.rpc.transports import connect_unix

from e2e_support import DaemonProc, git_fsck_all

FRAMES = {"n": 0}
SCALE = 20 if os.environ.get("SESSIONDAG_SLOW") else 1  # long campaign: SESSIONDAG_SLOW=1


def FUZZ(n):
    return settings(max_examples=n * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
EXCLUDED = {"daemon/stop", "shutdown", "daemon/ping", "initialize"}
METHODS = sorted(rpc_schema.request_methods() - EXCLUDED)
ERROR_CODES = set(rpc_schema.error_codes())


class Raw:
    def __init__(self, path: str):
        self.sock = connect_unix(path, timeout=10)
        self.sock.settimeout(10)
        self.buf = codec.FrameBuffer()
        self.queue: list[bytes] = []

    def send(self, data: bytes) -> None:
        FRAMES["n"] += 1
        self.sock.sendall(data)

    def recv(self):
        """The next answer; notifications (a session the fuzz subscribed to changed) are skipped."""
        while True:
            while not self.queue:
                data = self.sock.recv(1 << 16)
                if not data:
                    return None
                self.queue += self.buf.feed(data)
            msg = orjson.loads(self.queue.pop(0))
            if not (isinstance(msg, dict) and "method" in msg and "id" not in msg):
                return msg

    def close(self):
        self.sock.close()


@pytest.fixture(scope="module")
def fuzz_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzz")
    state, work = base / "state", base / "work"
    work.mkdir()
    env = dict(os.environ, SESSIONDAG_HOME=str(base / "home"), XDG_RUNTIME_DIR=str(base / "run"))
    d = DaemonProc(["--socket", str(base / "d.sock"), "--state-dir", str(state)], env=env)
    c = Raw(d.socket)
    ids = {}
    for i, sid in enumerate(("fz-a", "fz-b")):
        c.send(codec.encode({"jsonrpc": "2.0", "id": i, "method": "session/open",
                             "params": {"session_id": sid, "working_dir": str(work)}}))
        assert "result" in c.recv()
    c.send(codec.encode({"jsonrpc": "2.0", "id": 9, "method": "session/append", "params": {
        "session_id": "fz-a", "node": {"role": "user", "name": "u", "output": "x", "predecessor": "ROOT"}}}))
    ids["node"] = c.recv()["result"]["node"]["id"]
    yield {"daemon": d, "raw": c, "state": str(state), "work": str(work), "ids": ids}
    c.close()
    d.stop()


@lru_cache(maxsize=None)
def _validator(method=None):
    """One compiled validator per schema: checking the meta-schema on every answer cost ~70 s a run."""
    schema = rpc_schema.error_schema() if method is None else rpc_schema.result_schema(method)
    return jsonschema.Draft202012Validator(schema)


def _check_answer(msg, rid, method=None):
    assert msg is not None, "daemon closed a connection that sent a well-framed message"
    assert msg.get("jsonrpc") == "2.0" and msg.get("id") == rid, msg
    if "error" in msg:
        assert msg["error"]["code"] in ERROR_CODES, msg
        assert msg["error"]["code"] != -32603, f"internal error: {msg}"
        _validator().validate(msg["error"])
    else:
        assert method is not None, msg
        _validator(method).validate(msg["result"])


@given(st.lists(st.binary(max_size=200), min_size=1, max_size=10))
@FUZZ(150)
def test_random_bytes_bodies_get_parse_or_request_errors(fuzz_env, bodies):
    c = fuzz_env["raw"]
    for body in bodies:
        c.send(codec.frame(body))
        msg = c.recv()
        assert msg["id"] is None and msg["error"]["code"] in (-32700, -32600), msg


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=15)


@given(st.lists(json_values | st.floats() | st.fixed_dictionaries({"jsonrpc": st.just("2.0")}, optional={
    "id": json_values, "method": json_values, "params": json_values}), min_size=1, max_size=10))
@FUZZ(200)
def test_random_json_messages(fuzz_env, values):
    c = fuzz_env["raw"]
    for v in values:
        is_call = isinstance(v, dict) and "method" in v
        assume(not (is_call and v.get("method") == "exit"))  # exit closes the connection by design
        c.send(codec.frame(json.dumps(v).encode()))  # stdlib: big ints and Infinity go out as-is
        if is_call and isinstance(v.get("method"), str) and "id" not in v:
            continue  # a notification: no answer
        msg = c.recv()
        assert "error" in msg, msg
        assert msg["error"]["code"] in ERROR_CODES and msg["error"]["code"] != -32603, msg


def _params(ids, work):
    keys = ["session_id", "node", "head_id", "node_id", "expected_head", "working_dir", "caller_node_id",
            "source", "name", "format", "frame", "kind", "covers_ids", "summary", "message", "output",
            "status", "metadata", "content", "allow_working_dir_mismatch", "root_id", "bogus"]
    values = (json_values | st.sampled_from(["fz-a", "fz-b", "ROOT", ids["node"], work, "openai", "tree",
                                             "user", "completed"])
              | st.fixed_dictionaries({"role": st.sampled_from(["user", "llm", "code", "x"]),
                                       "name": st.text(max_size=5)},
                                      optional={"predecessor": st.sampled_from([None, "ROOT", ids["node"]]),
                                                "caller": st.sampled_from(["ROOT", ids["node"], "zz"]),
                                                "output": json_values, "metadata": json_values}))
    return st.dictionaries(st.sampled_from(keys), values, max_size=6)


@given(st.data())
@FUZZ(120)
def test_random_params_to_real_methods(fuzz_env, data):
    c = fuzz_env["raw"]
    for i in range(6):
        method = data.draw(st.sampled_from(METHODS))
        params = data.draw(_params(fuzz_env["ids"], fuzz_env["work"]))
        if method == "session/reset" and params.get("session_id") in ("fz-a", "fz-b"):
            params["session_id"] = "fz-scratch"
        rid = f"r{i}"
        c.send(codec.frame(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()))
        _check_answer(c.recv(), rid, method)


@given(st.binary(min_size=1, max_size=300))
@FUZZ(40)
def test_unframed_garbage_closes_only_that_connection(fuzz_env, junk):
    other = Raw(fuzz_env["daemon"].socket)
    other.send(junk + b"\r\n\r\n")
    other.sock.shutdown(socket.SHUT_WR)
    while other.recv() is not None:  # an error answer is fine; then EOF
        pass
    other.close()
    c = fuzz_env["raw"]
    c.send(codec.encode({"jsonrpc": "2.0", "id": "alive", "method": "daemon/ping", "params": {}}))
    assert c.recv() == {"jsonrpc": "2.0", "id": "alive", "result": {}}


def test_oversized_frame_closes_the_connection(fuzz_env):
    other = Raw(fuzz_env["daemon"].socket)
    other.send(b"Content-Length: %d\r\n\r\n" % (1 << 40))
    assert other.recv() is None
    other.close()


def test_daemon_survives_and_sessions_pass_fsck(fuzz_env):
    c = fuzz_env["raw"]
    # Whatever ran before (or nothing, when this test runs alone): at least 2,000 frames reach the daemon.
    for i in range(max(0, 2000 - FRAMES["n"])):
        c.send(codec.frame(b'{"jsonrpc": "2.0", "id": %d, "method": "session/get_node", "params": []}' % i))
        _check_answer(c.recv(), i, "session/get_node")
    print(f"fuzz frames sent: {FRAMES['n']}")
    assert FRAMES["n"] >= 2000, FRAMES
    c.send(codec.encode({"jsonrpc": "2.0", "id": "s", "method": "daemon/status", "params": {}}))
    status = c.recv()["result"]
    assert status["pid"] == fuzz_env["daemon"].proc.pid
    for sid in ("fz-a", "fz-b"):
        c.send(codec.encode({"jsonrpc": "2.0", "id": sid, "method": "session/commit", "params": {"session_id": sid}}))
        assert "result" in c.recv()
        c.send(codec.encode({"jsonrpc": "2.0", "id": sid, "method": "session/get_branch", "params": {"session_id": sid}}))
        assert "result" in c.recv()
    git_fsck_all(fuzz_env["state"])
