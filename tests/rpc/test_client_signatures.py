"""The Python client's methods match rpc_schema/: one method per request, the same params (names,
required ones positional or keyword without a default, optional ones with a default), typed results."""

import functools
import importlib.util
import inspect
import os
import types
import typing

import pytest

from sessiondag.rpc import schema
from sessiondag_client.client import RPC_METHODS, AsyncClient
from sessiondag_client.connection import Connection
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
        assert "return" in hints and hints["return"] is not typing.Any, attr


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


def _generator():
    """clients/python/scripts/gen_wire.py, loaded as a module (a fresh one: a test may change its globals)."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python", "scripts", "gen_wire.py")
    spec = importlib.util.spec_from_file_location("gen_wire", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_gen_wire = functools.cache(_generator)   # the one the read-only checks share


def test_each_sent_method_has_a_params_builder_with_the_schema_keys():
    """wire/protocol.py's `<method>_params(**fields)`: what the client's methods send, one keyword per
    schema param (`from` as `from_`), an optional one that is None left out, a required one kept."""
    for name in schema.request_methods():
        td = _generated(name, "Params")
        if not typing.is_typeddict(td):
            continue
        build = getattr(protocol, _gen_wire().snake(name) + "_params")
        kw = {p.rstrip("_") for p in inspect.signature(build).parameters}
        assert kw == set(td.__annotations__), name
        required = {p.rstrip("_") for p, v in inspect.signature(build).parameters.items()
                    if v.default is inspect.Parameter.empty}
        hints = typing.get_type_hints(td, include_extras=True)   # (__required_keys__ cannot see a string NotRequired)
        assert required == {k for k, t in hints.items() if typing.get_origin(t) is not typing.NotRequired}, name
    assert protocol.session_diff_params(session_id="s", from_="a", to=None) == {"session_id": "s", "from": "a"}
    assert protocol.session_name_branch_params(session_id="s", head_id="h", name=None) == {
        "session_id": "s", "head_id": "h", "name": None}   # a required null is sent: it drops the name


# --- notifications and server→client requests: typed by the generated types, one overload per method ---

def _server_requests() -> set[str]:
    return {n for n, m in schema.load()["methods"].items() if schema.kind(m) == "server-request"}


def _overloads(fn) -> dict:
    """The overloads of a method by the Literal value of their `method` param: {value: type hints}."""
    out = {}
    for o in typing.get_overloads(fn):
        hints = typing.get_type_hints(o)
        (value,) = typing.get_args(hints["method"]) if typing.get_origin(hints["method"]) is typing.Literal else (None,)
        out[value] = hints
    return out


def _schema_keys(method: str) -> tuple[set[str], set[str]]:
    """(every param name, the required ones) of a method in rpc_schema/."""
    listed = schema.load()["methods"][method].get("params", [])
    return {p["name"] for p in listed}, {p["name"] for p in listed if p.get("required")}


def _typed_dict_keys(td) -> tuple[set[str], set[str]]:
    hints = typing.get_type_hints(td, include_extras=True)
    return set(hints), {k for k, t in hints.items() if typing.get_origin(t) is not typing.NotRequired}


def test_every_notification_has_its_generated_message_type():
    """wp.<Method>Notification for each notification of the schema: its `method` the Literal name, its
    params the schema's params (names, required ones); wp.ServerNotification is their union, exactly."""
    names = schema.notification_methods()
    assert set(protocol.SERVER_NOTIFICATIONS) == names
    members = set(typing.get_args(protocol.ServerNotification))
    assert members == {_generated(n, "Notification") for n in names}
    for name in names:
        hints = typing.get_type_hints(_generated(name, "Notification"))
        assert hints["method"] == typing.Literal[name] and hints["jsonrpc"] == typing.Literal["2.0"], name
        params = hints["params"]
        assert params is _generated(name, "Params"), name
        if typing.is_typeddict(params):
            assert _typed_dict_keys(params) == _schema_keys(name), name
        else:
            assert _schema_keys(name) == (set(), set()), name


def test_next_notification_has_one_overload_per_notification():
    got = _overloads(Connection.next_notification)
    assert set(got) - {None} == schema.notification_methods()
    for name, hints in got.items():
        want = protocol.ServerNotification if name is None else _generated(name, "Notification")
        assert hints["return"] == want, name
    for attr in ("notifications", "pending_notifications"):   # every notification: the union
        ret = typing.get_type_hints(getattr(Connection, attr))["return"]
        assert typing.get_args(ret) == (protocol.ServerNotification,), attr


def test_on_request_has_one_overload_per_server_request_and_no_other():
    """A handler of each server→client request takes the generated Params and gives the generated
    Result (the schema's keys); a method the schema lacks has no overload, so mypy refuses it."""
    names = _server_requests()
    assert set(protocol.SERVER_REQUESTS) == names
    got = _overloads(Connection.on_request)
    assert set(got) == names
    for name in names:
        handler = got[name]["handler"]
        assert handler == _generated(name, "Handler"), name
        (params,), awaited = typing.get_args(handler)
        assert params is _generated(name, "Params") and typing.get_args(awaited) == (_generated(name, "Result"),)
        assert _typed_dict_keys(params) == _schema_keys(name), name
        result = schema.result_schema(name)
        if typing.is_typeddict(_generated(name, "Result")):
            assert _typed_dict_keys(_generated(name, "Result")) == (set(result["properties"]),
                                                                  set(result.get("required", []))), name


def _mypy_errors(monkeypatch, good, bad) -> str:
    """mypy --strict on two files beside the client: `good` passes, `bad` fails; what it said of `bad`."""
    from mypy import api
    monkeypatch.setenv("MYPYPATH", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "clients",
                                                                "python")))
    args = ["--strict", "--no-incremental", "--follow-imports=silent", "--python-version=3.11"]
    out, _, rc = api.run([*args, str(good)])
    assert rc == 0, out
    out, _, rc = api.run([*args, str(bad)])
    assert rc == 1, out
    return out


@pytest.mark.slow
def test_mypy_refuses_a_call_the_schema_does_not_allow(tmp_path, monkeypatch):
    """The client's params are checked statically: a wrong value or an unknown param of a builder is a
    mypy error (the client modules are strict in pyproject.toml), the right ones are not."""
    good = tmp_path / "good.py"
    good.write_text("from sessiondag_client.wire import protocol as wp\n"
                    "p = wp.session_get_branch_params(session_id='s', order='desc', limit=3)\n")
    bad = tmp_path / "bad.py"
    bad.write_text("from sessiondag_client.wire import protocol as wp\n"
                   "p = wp.session_get_branch_params(session_id='s', order='up')\n"
                   "q = wp.session_get_branch_params(session_id='s', limt=3)\n")
    out = _mypy_errors(monkeypatch, good, bad)
    assert 'bad.py:2: error: Argument "order"' in out and 'bad.py:3: error: Unexpected keyword argument "limt"' in out
    assert out.count("error:") == 2, out


@pytest.mark.slow
def test_mypy_refuses_a_notification_or_handler_the_schema_does_not_allow(tmp_path, monkeypatch):
    """Notifications and server→client requests are checked statically too: a key a notification's
    params lack (after narrowing on its method), a handler registered under another request, a result
    key the request's result lacks and a method the schema lacks are mypy errors; the right ones are not."""
    head = ("from sessiondag_client import AsyncClient\n"
            "from sessiondag_client.wire import protocol as wp\n"
            "async def ask(p: wp.AgentAskUserParams) -> wp.AgentAskUserResult:\n"
            "    return {'answer': p['question']}\n"
            "async def allow(p: wp.AgentRequestPermissionParams) -> wp.AgentRequestPermissionResult:\n"
            "    return {'granted': p['kind'] == 'write'}\n")
    good = tmp_path / "good.py"
    good.write_text(head +
                    "async def main(c: AsyncClient) -> None:\n"
                    "    c.on_request('agent/ask_user', ask)\n"
                    "    c.on_request('agent/request_permission', allow)\n"
                    "    async for m in c.notifications():\n"
                    "        if m['method'] == 'session/did_change':\n"
                    "            print(m['params']['changes'])\n"
                    "    d = await c.next_notification('agent/did_update')\n"
                    "    print(d['params']['kind'])\n")
    bad = tmp_path / "bad.py"
    bad.write_text(head +
                   "async def wrong(p: wp.AgentAskUserParams) -> wp.AgentAskUserResult:\n"
                   "    q = p['questoin']\n"                                         # 8: no such params key
                   "    return {'answr': q}\n"                                       # 9: no such result key
                   "async def main(c: AsyncClient) -> None:\n"
                   "    c.on_request('agent/request_permission', ask)\n"             # 11: another request's handler
                   "    c.on_request('agent/ask_usr', ask)\n"                        # 12: no such request
                   "    async for m in c.notifications():\n"
                   "        if m['method'] == 'session/did_delete':\n"
                   "            print(m['params']['kind'])\n"                        # 15: did_delete has no kind
                   "    d = await c.next_notification('session/did_change')\n"
                   "    print(d['params']['delta'])\n")                              # 17: did_change has no delta
    out = _mypy_errors(monkeypatch, good, bad)
    lines = sorted({int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line})
    assert lines == [8, 9, 11, 12, 15, 17], out


def test_sync_client_has_every_client_method_typed_as_it_is():
    """SyncClient names each AsyncClient method (no __getattr__ a checker would take as Any): a
    coroutine method blocks on the client's loop with its parameters and result; the overloaded
    ones (view, next_notification, on_request) are the same descriptors at run time."""
    from sessiondag_client.sync import SyncClient, _Blocking, _OnLoop
    public = {n for n in dir(AsyncClient) if not n.startswith("_") and callable(getattr(AsyncClient, n))}
    public -= {"notifications"}   # an async iterator: used through `c.inner` on the loop
    mine = {n: v for n, v in vars(SyncClient).items() if isinstance(v, (_Blocking, _OnLoop))}
    assert set(mine) == public
    for name, d in mine.items():
        assert d.name == name
        assert isinstance(d, _Blocking) == inspect.iscoroutinefunction(getattr(AsyncClient, name)), name


@pytest.mark.slow
def test_mypy_refuses_a_sync_client_call_the_client_does_not_take(tmp_path, monkeypatch):
    """SyncClient's methods are AsyncClient's, blocking: a misspelt method, an unknown param, a wrong
    value, a key a notification lacks and a wrong use of a result are mypy errors; the right ones are not."""
    good = tmp_path / "good.py"
    good.write_text("from sessiondag_client import SyncClient\n"
                    "def main(c: SyncClient) -> None:\n"
                    "    h = c.open(working_dir='/w')\n"
                    "    nodes = c.get_branch(h.id, order='desc', limit=3)\n"
                    "    print(nodes[0].output, c.view(h.id, 'tree')['id'], c.status()['pid'])\n"
                    "    print(c.next_notification('session/did_change')['params']['changes'])\n")
    bad = tmp_path / "bad.py"
    bad.write_text("from sessiondag_client import SyncClient\n"
                   "def main(c: SyncClient) -> None:\n"
                   "    h = c.opn(working_dir='/w')\n"                                 # 3: no such method
                   "    c.open(workdir='/w')\n"                                        # 4: no such param
                   "    c.get_branch('s', order='up')\n"                               # 5: not an order
                   "    print(c.next_notification('session/did_change')['params']['delta'])\n"  # 6: no delta
                   "    n: int = c.ping()\n")                                          # 7: ping gives a dict
    out = _mypy_errors(monkeypatch, good, bad)
    lines = sorted({int(line.split(":")[1]) for line in out.splitlines() if ": error:" in line})
    assert lines == [3, 4, 5, 6, 7], out


def test_the_sync_clients_overloads_are_the_async_clients(tmp_path):
    """sync_overloads.py is generated from AsyncClient's source: an overload added to AsyncClient
    (here: a new `kind` of `view`) changes what the generator writes, so the check above fails until
    it is run; every overloaded method of AsyncClient is there, as many overloads as it has."""
    gen = _generator()
    text = gen.sync_overloads(gen.SCHEMA_DIR)
    for name, defs in gen.SYNC_GEN.overloaded(open(gen.CLIENT, encoding="utf-8").read(), "AsyncClient"):
        assert text.count(f"def {name}(") == len(defs), name
    assert text.count("def on_request(") == len(protocol.SERVER_REQUESTS) + 1
    client = open(gen.CLIENT, encoding="utf-8").read()
    marker = "    async def view(self, session_id: str, kind: Literal[\"chat\", \"tree\"]"
    assert marker in client
    grown = client.replace(marker, "    @overload\n    async def view(self, session_id: str, kind: Literal[\"dag\"], *, "
                           "head_id: str | None = None,\n                   root_id: str | None = None) -> str: ...\n\n"
                           + marker, 1)
    fake = tmp_path / "client.py"
    fake.write_text(grown, encoding="utf-8")
    old, gen.CLIENT = gen.CLIENT, str(fake)
    try:
        assert "kind: Literal['dag']" in gen.sync_overloads(gen.SCHEMA_DIR) != text
    finally:
        gen.CLIENT = old
