"""What a private `sessiondag serve --stdio` child (the one `sessiondag run` spawns) loads before it
answers: not the Python client's connection stack, and no params validator of a method it was not
asked (rpc/params.py builds each at its first request; a socket daemon builds all before listening)."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from sessiondag.rpc import params, schema
from sessiondag.rpc.invalid_params import InvalidParams
from sessiondag_client.connecting import spawn_stdio

CLIENT_STACK = ("sessiondag_client.client", "sessiondag_client.connection", "sessiondag_client.connecting",
                "sessiondag_client.sync", "sessiondag_client.wire.protocol")


def _python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    return out.stdout


def test_the_serve_command_does_not_import_the_client_stack():
    loaded = orjson.loads(_python(
        "import sys, orjson, sessiondag.cli.serve\n"
        f"print(orjson.dumps([m for m in {CLIENT_STACK!r} if m in sys.modules]).decode())"))
    assert loaded == []


def test_the_client_package_still_exports_every_name():
    names = orjson.loads(_python(
        "import orjson, sessiondag_client as c\n"
        "from sessiondag_client import *\n"
        "print(orjson.dumps([[n, getattr(c, n).__module__ if hasattr(getattr(c, n), '__module__') else ''] "
        "for n in c.__all__]).decode())"))
    assert {n for n, _ in names} >= {"connect", "spawn_stdio", "AsyncClient", "SyncClient", "RpcError", "Call"}
    assert all(m.startswith("sessiondag_client.") for _, m in names), names
    import sessiondag_client
    assert set(sessiondag_client.__all__) == set(sessiondag_client._FROM)
    with pytest.raises(AttributeError):
        sessiondag_client.no_such_name  # noqa: B018


def test_validators_are_built_at_first_request_unless_warmed():
    seen = orjson.loads(_python(
        "import orjson\n"
        "from sessiondag.rpc import connection, params\n"
        "before = sorted(params._COMPILED)\n"
        "params.check('session/open', {'working_dir': '/w'})\n"
        "params.check('no/such_method', {'x': 1})\n"
        "after = sorted(params._COMPILED)\n"
        "params.warm()\n"
        "print(orjson.dumps([before, after, sorted(params._COMPILED)]).decode())"))
    assert seen == [[], ["session/open"], sorted(schema.request_methods())]


@pytest.mark.parametrize("method", sorted(schema.request_methods()))
def test_a_lazily_built_validator_judges_as_the_full_table(method):
    params._COMPILED.pop(method, None)
    bad = {"bogus_param": 1}
    with pytest.raises(InvalidParams) as lazy:
        params.check(method, bad)
    with pytest.raises(InvalidParams) as full:
        params.compiled()[method].check(bad)
    assert str(lazy.value) == str(full.value) == "unknown params: ['bogus_param']"


@pytest.mark.anyio
async def test_a_stdio_child_checks_params_of_its_first_requests(tmp_path):
    c = await spawn_stdio(str(tmp_path / "state"))
    try:
        with pytest.raises(Exception) as e:
            await c.call("session/open", {"working_dir": str(tmp_path), "bogus": 1})
        assert "unknown params: ['bogus']" in str(e.value)
        opened = await c.call("session/open", {"working_dir": str(tmp_path)})
        assert opened["session_id"]
    finally:
        await c.aclose()
