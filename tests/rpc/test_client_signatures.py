"""The Python client's methods match rpc_schema/: one method per request, the same params (names,
required ones positional or keyword without a default, optional ones with a default), typed results."""

import inspect
import typing

from sessiondag.rpc import schema
from sessiondag_client.client import RPC_METHODS, AsyncClient

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
