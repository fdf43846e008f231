"""The daemon→client requests (`x-kind: server-request`) are rpc_schema/'s exactly: every one the
daemon's rpc/ layer sends is listed there with params and a result, and the ACP adapter answers
each of them (agent/run_in_terminal included). The shapes on the wire are checked against these
schemas by tests/acp/test_run_in_terminal_rpc.py, test_client_fs_rpc.py and
test_permission_old_text.py."""

import ast
import os

import jsonschema

import sessiondag.acp.daemon_requests
import sessiondag.rpc
from sessiondag.rpc import schema

RPC_DIR = os.path.dirname(sessiondag.rpc.__file__)


def _sent_by_the_daemon() -> set[str]:
    """The method names of `<x>.client.request(…, "agent/…", …)` calls in rpc/ (direct or through
    a runner such as anyio.from_thread.run)."""
    sent = set()
    for name in sorted(os.listdir(RPC_DIR)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(RPC_DIR, name)) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            args = [node.func, *node.args]
            for i, a in enumerate(args[:-1]):
                nxt = args[i + 1]
                if isinstance(a, ast.Attribute) and a.attr == "request" and isinstance(a.value, ast.Attribute) \
                        and a.value.attr == "client" and isinstance(nxt, ast.Constant) and isinstance(nxt.value, str):
                    sent.add(nxt.value)
    return sent


def _server_requests() -> dict[str, dict]:
    return {n: m for n, m in schema.load()["methods"].items() if schema.kind(m) == "server-request"}


def test_the_server_requests_the_daemon_sends_are_the_schemas():
    sent = _sent_by_the_daemon()
    assert "agent/run_in_terminal" in sent
    assert sent == set(_server_requests())


def _answered_by_the_acp_adapter() -> set[str]:
    """The method names of the `client.on_request("agent/…", handler)` calls in acp/daemon_requests.py's
    `register` (one call per method, so each handler is type-checked against its own method)."""
    with open(sessiondag.acp.daemon_requests.__file__) as f:
        tree = ast.parse(f.read())
    register = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "register")
    return {c.args[0].value for c in ast.walk(register)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "on_request"
            and c.args and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str)}


def test_the_acp_adapter_answers_every_server_request():
    assert "agent/run_in_terminal" in _answered_by_the_acp_adapter()
    assert _answered_by_the_acp_adapter() == set(_server_requests())


def test_each_server_request_has_a_valid_params_and_result_schema():
    for name, m in _server_requests().items():
        assert m.get("params") and "result" in m, name
        jsonschema.Draft202012Validator.check_schema(schema.params_schema(name))
        jsonschema.Draft202012Validator.check_schema(schema.result_schema(name))
    p = schema.params_schema("agent/run_in_terminal")
    assert set(p["required"]) == {"session_id", "command", "args", "cwd", "timeout"}
    assert schema.result_schema("agent/run_in_terminal")["required"] == ["output"]
