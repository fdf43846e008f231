"""rpc_schema/ is the single source of truth: the daemon serves exactly its method set."""

import glob
import os

import jsonschema
import orjson
import pytest

from sessiondag.core.errors import ERROR_CLASSES
from sessiondag.rpc import agent_methods, replay_methods, session_methods, sync_methods, usage_methods  # noqa: F401 - what the server imports
from sessiondag.rpc import schema
from sessiondag.rpc.connection import NOTIFICATIONS
from sessiondag.rpc.errors import APP_CODES
from sessiondag.rpc.registry import METHODS

BUILTIN = {"initialize", "shutdown"}  # handled by the connection itself, not the method table


def test_every_openrpc_document_is_merged():
    docs = [p for p in glob.glob(os.path.join(schema.SCHEMA_DIR, "*.json"))
            if "openrpc" in orjson.loads(open(p, "rb").read())]
    assert sorted(schema.load()["documents"]) == sorted(docs)
    assert any(p.endswith("openrpc.json") for p in docs)


def test_daemon_method_set_equals_schema_method_set():
    served = set(METHODS) | BUILTIN
    listed = schema.request_methods()
    assert served - listed == set(), f"served but missing from rpc_schema: {sorted(served - listed)}"
    assert listed - served == set(), f"in rpc_schema but not served: {sorted(listed - served)}"


def test_notifications_the_daemon_sends_are_in_the_schema():
    for name in NOTIFICATIONS:
        if name.startswith("session/"):
            assert name in schema.notification_methods()
    assert schema.notification_methods() >= {"session/did_change", "session/did_unbind", "session/did_rebind"}


@pytest.mark.slow
def test_every_schema_is_a_valid_json_schema():
    for name in schema.load()["methods"]:
        jsonschema.Draft202012Validator.check_schema(schema.params_schema(name))
        if "result" in schema.load()["methods"][name]:
            jsonschema.Draft202012Validator.check_schema(schema.result_schema(name))
    jsonschema.Draft202012Validator.check_schema(schema.error_schema())


def test_error_codes_match_the_daemon():
    codes = schema.error_codes()
    for kind, code in APP_CODES.items():
        assert code in codes, f"{kind} ({code}) missing from rpc_schema"
        data = codes[code].get("data", {})
        declared = data.get("properties", {}).get("kind", {})   # sessiondag_error: an enum, its own kind first
        assert declared.get("const", (declared.get("enum") or [None])[0]) == kind
    for kind in ERROR_CLASSES:
        assert kind in APP_CODES, f"typed error {kind} has no stable RPC code"
    assert {-32700, -32600, -32601, -32602, -32603, -32800} <= set(codes)
    assert len(set(APP_CODES.values())) == len(APP_CODES)


def test_every_method_lists_its_errors_by_reference():
    errors = schema.load()["errors"]
    for name, m in schema.load()["methods"].items():
        for e in m.get("errors", []):
            assert e["$ref"].split("/")[-1] in errors, (name, e)
