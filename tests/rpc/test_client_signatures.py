"""The Python client's methods match rpc_schema/: one method per request, the same params (names,
required ones positional or keyword without a default, optional ones with a default), typed results."""

import functools
import importlib.util
import inspect
import os
import types
import typing

from sessiondag.rpc import schema
from sessiondag_client.client import RPC_METHODS, AsyncClient
from sessiondag_client.wire import protocol
from sessiondag_client.wire.types import Call

LIFECYCLE = {"initialize"}  # the client sends it itself when it connects


def test_every_request_method_has_its_client_method():
    assert set(RPC_METHODS) == schema.request_methods() - LIFECYCLE


def test_client_params_are_the_schema_params():
    for name, attr in RPC_METHODS.items():
        fn = getattr(AsyncClient, attr)
        sig = inspect.signature(fn)
        # a param named after a Python keyword takes a trailing underscore (session/diff `from`: from_)
        params = {p.rstrip("_"): v for p, v in sig.parameters.items() if p != "self"}
        listed = schema.load()["methods"][name].get("params", [])
        assert set(params) == {p["name"] for p in listed}, name
        for p in listed:
            has_default = params[p["name"]].default is not inspect.Parameter.empty
            assert has_default != bool(p.get("required")) or p["name"] in _REQUIRED_WITH_DEFAULT, (name, p["name"])


# required by the schema, but the client supplies the usual value
_REQUIRED_WITH_DEFAULT: set[str] = set()


def test_results_are_typed():
    for attr in set(RPC_METHODS.values()) | {"get_branch"}:
        hints = typing.get_type_hints(getattr(AsyncClient, attr))
        assert "return" in hints and hints["return"] is not typing.Any or attr == "view", attr


def test_render_takes_what_the_daemon_takes():
    hints = typing.get_type_hints(AsyncClient.render)
    frame = schema.load()["methods"]["session/render"]["params"]
    assert {p["name"]: p["schema"].get("type") for p in frame}["frame"] == "string"
    assert hints["frame"] == (str | None) and hints["manifest"] == (dict[str, typing.Any] | None)


# --- the client's types are the generated wire types (wire/protocol.py, drift-checked against rpc_schema/
# by tests/rpc/test_error_registry.py::test_the_generated_python_files_are_current) ---------------------

# params where the client takes more than the wire type: (method, param) -> what else it takes
_WIDER = {("session/append", "node"): {Call}}          # a Call dataclass, sent as its wire dict
# methods whose result the client returns reshaped: a dataclass of wire/types.py, a tuple, one field
_RESHAPED = {"open", "start", "resume", "append", "update", "get_node", "get_branch_page", "list_branches",
             "render", "view", "compact", "name_branch", "shutdown"}
_ONE_FIELD = {"reset": "reset", "list": "sessions", "checkout": "head_id", "spawn_branch": "node_id",
              "commit": "commit", "unsubscribe": "unsubscribed"}


def _alternatives(t) -> set:
    """The alternatives of an annotation: a union's members, a Literal's values, None left out (an
    optional param's None means "not sent", and a null the schema allows is not sent either)."""
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        return set().union(*(_alternatives(a) for a in typing.get_args(t)))
    if typing.get_origin(t) is typing.Literal:
        return {("literal", v) for v in typing.get_args(t) if v is not None}
    return set() if t is type(None) else {t}


def _generated(method: str, suffix: str):
    return getattr(protocol, _gen_wire().pascal(method) + suffix)


def test_client_param_types_are_the_generated_params():
    for name, attr in RPC_METHODS.items():
        td = _generated(name, "Params")
        wire = typing.get_type_hints(td) if typing.is_typeddict(td) else {}
        hints = typing.get_type_hints(getattr(AsyncClient, attr))
        for p, want in wire.items():
            got = hints[p + "_" if p + "_" in hints else p]
            if want is typing.Any:
                continue
            extra = _WIDER.get((name, p), set())
            assert _alternatives(got) == _alternatives(want) | extra, (name, p, got, want)


def test_client_results_are_the_generated_results():
    for name, attr in RPC_METHODS.items():
        if attr in _RESHAPED:
            continue
        ret = typing.get_type_hints(getattr(AsyncClient, attr))["return"]
        result = _generated(name, "Result")
        if attr in _ONE_FIELD:
            assert ret == typing.get_type_hints(result)[_ONE_FIELD[attr]], attr
        else:
            assert ret == result, (attr, ret)


def test_the_check_fails_on_a_param_the_schema_types_otherwise():
    """The comparison above tells a drifted annotation from the schema's (the check can fail)."""
    want = typing.get_type_hints(protocol.SessionGetBranchParams)["order"]
    assert _alternatives(typing.Literal["asc", "desc"] | None) == _alternatives(want)
    assert _alternatives(str | None) != _alternatives(want)
    assert _alternatives(list[str] | None) != _alternatives(typing.get_type_hints(protocol.AgentPromptParams)["client_fs"])


@functools.cache
def _gen_wire():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python", "scripts", "gen_wire.py")
    spec = importlib.util.spec_from_file_location("gen_wire", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
