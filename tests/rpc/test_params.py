"""Request params are checked by validators compiled from rpc_schema/ (rpc/params.py)."""

import jsonschema
import pytest

from sessiondag.core.errors import InvalidNodeError, InvalidSessionIdError
from sessiondag.rpc import params, schema
from sessiondag.rpc.errors import error_object
from sessiondag.rpc.registry import InvalidParams


def _check(method, p):
    return params.compiled()[method].check(p)


def test_one_compiled_validator_per_request_method():
    assert set(params.compiled()) == schema.request_methods()


@pytest.mark.parametrize("method, p, param, words", [
    ("session/get_branch", {"session_id": "s", "order": "up"}, "order", ['"asc"', '"desc"']),
    ("session/get_branch", {"session_id": "s", "limit": 0}, "limit", ["minimum of 1"]),
    ("session/get_branch", {"session_id": "s", "limit": True}, "limit", ["integer"]),
    ("session/get_branch", {"session_id": "s", "after": ""}, "after", ["shorter than 1"]),
    ("session/get_branch", {"session_id": "s", "cursor": "x"}, "cursor", ["unknown params: ['cursor']"]),
    ("session/name_branch", {"session_id": "s", "head_id": "h"}, "name", ["missing param 'name'"]),
    ("session/open", {"working_dir": "rel/dir"}, "working_dir", ["^/"]),
    ("session/open", {"working_dir": "/a\0b"}, "working_dir", ["^/"]),
    ("session/open", {"working_dir": "/a", "temperature": 3}, "temperature", ["maximum of 2"]),
    ("session/open", {"working_dir": "/a", "model": "m\0"}, "model", []),
    ("daemon/ping", {"delay": 61}, "delay", ["maximum of 60"]),
    ("session/compact", {"session_id": "s", "covers_ids": ["a", 3], "summary": ""}, "covers_ids.1", ["string"]),
    ("agent/prompt", {"session_id": "s", "content": {"attachments": [{"data": "x", "media_type": "a/b"}]}},
     "content.attachments.0", ['"name" is a required property']),
    ("agent/prompt", {"session_id": "s", "content": "x", "client_fs": ["delete"]}, "client_fs.0", ["read"]),
])
def test_refusals_are_invalid_params_naming_the_param(method, p, param, words):
    with pytest.raises(InvalidParams) as ei:
        _check(method, p)
    err = error_object(ei.value)
    assert err["code"] == -32602 and err["data"] == {"kind": "invalid_params", "param": param}
    assert param.split(".")[0] in err["message"] and all(w in err["message"] for w in words), err["message"]
    with pytest.raises(jsonschema.ValidationError):  # the schema itself refuses it too (no hidden rule)
        jsonschema.validate({k: v for k, v in p.items()}, schema.params_schema(method))


def test_null_is_absent_unless_the_schema_takes_null():
    assert _check("session/get_branch", {"session_id": "s", "head_id": None, "limit": None}) == {"session_id": "s"}
    p = _check("session/name_branch", {"session_id": "s", "head_id": "h", "name": None})
    assert "name" in p and p["name"] is None
    p = _check("session/update", {"session_id": "s", "node_id": "n", "output": None})
    assert "output" in p and p["output"] is None and p["status"] is None  # absent reads as None
    with pytest.raises(InvalidParams, match="missing param 'session_id'"):
        _check("session/get_node", {"session_id": None, "node_id": "n"})
    with pytest.raises(InvalidParams, match="unknown params"):
        _check("session/open", {"working_dir": "/a", "bogus": None})


def test_integral_floats_are_passed_on_as_ints():
    p = _check("session/get_branch", {"session_id": "s", "limit": 5.0})
    assert p["limit"] == 5 and type(p["limit"]) is int
    with pytest.raises(InvalidParams):
        _check("session/get_branch", {"session_id": "s", "limit": 5.5})


def test_session_ids_and_nodes_keep_their_typed_errors():
    for bad in (".hidden", "../etc", "a/b", "x" * 129, ""):
        with pytest.raises(InvalidSessionIdError):
            _check("session/get_node", {"session_id": bad, "node_id": "n"})
    with pytest.raises(InvalidParams):  # not a string at all: the params do not fit
        _check("session/get_node", {"session_id": 5, "node_id": "n"})
    with pytest.raises(InvalidNodeError, match="robot"):
        _check("session/append", {"session_id": "s", "node": {"role": "robot", "name": "x"}})
    with pytest.raises(InvalidNodeError):
        _check("session/append", {"session_id": "s", "node": {"role": "user", "name": "x", "id": "i" * 200}})
    with pytest.raises(InvalidParams):  # other params wrong too: invalid params first, like before
        _check("session/append", {"session_id": "s", "node": {"role": "robot", "name": "x"}, "expected_head": 1})


def test_long_values_are_not_echoed_whole():
    with pytest.raises(InvalidParams) as ei:
        _check("session/get_branch", {"session_id": "s", "order": "x" * 100_000})
    assert len(str(ei.value)) < params.MAX_MESSAGE + 100
