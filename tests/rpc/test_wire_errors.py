"""One table between the daemon's typed errors and the wire kinds; one (de)serializer both sides use."""

import errno

import pytest

from sessiondag.core import errors as core
from sessiondag.rpc.errors import KIND_CLASSES, error_object, from_wire
from sessiondag.rpc.registry import InvalidParams
from sessiondag.rpc import schema
from sessiondag_client.wire import errors as wire

SAMPLES = [
    core.InvalidNodeError("unknown role 'robot'"), core.PredecessorMissingError("user", "me"),
    core.BrokenPredecessorChainError("n1", "dangling"), core.NotFoundError("node", "n9"),
    core.HeadMismatchError("a", "b"), core.InvalidSessionIdError("../x", "use [A-Za-z0-9._-]"),
    core.SessionExistsError("s"), core.SessionResumeError("s", "working_dir_mismatch", "elsewhere"),
    core.WorkingDirUnboundError("s", "/gone"), core.StorageError("read-only", errno.EROFS, "/x"),
    core.StorageFullError("full", errno.ENOSPC, None), core.ConfigError("SESSIONDAG_X", "y", "an int"),
    core.SessionDeletedError("s", "gone"), core.SessionBusyError("s", [12], ""),
    core.InvalidCursorError("c", "no such node"), core.ReplayRefusedError("n1", "policy_version", "another version"),
    core.WorkspaceDirtyError("s", ["a.txt", "b/c"]),
    core.TurnRunningError("s"), core.NoCheckpointError("n1", "its turn is still open"),
    core.McpServerError("fs", "start_failed", "ENOENT", "mcp.json"),
]


def test_every_typed_error_has_one_wire_kind_and_the_schema_agrees():
    assert {type(e) for e in SAMPLES} == set(core.ERROR_CLASSES.values())
    declared = schema.load()["errors"]
    for kind, cls in KIND_CLASSES.items():
        assert kind in wire.KINDS and wire.ERROR_CLASSES[kind].__name__ == cls.__name__
        if kind in declared:
            assert declared[kind]["code"] == wire.APP_CODES[kind]
    assert len(set(wire.APP_CODES.values())) == len(wire.APP_CODES)


@pytest.mark.parametrize("exc", SAMPLES, ids=lambda e: type(e).__name__)
def test_typed_errors_round_trip_daemon_to_client_to_daemon(exc):
    obj = error_object(exc)
    assert obj["data"]["kind"] == exc.code and obj["code"] == wire.APP_CODES[exc.code]
    got = wire.from_error(obj)  # what the client raises
    assert type(got) is wire.ERROR_CLASSES[exc.code] and str(got) == str(exc)
    assert got.rpc_code == obj["code"] and got.rpc_data == obj["data"]
    for key, value in exc.data().items():
        assert getattr(got, wire.ATTR_ALIASES.get(key, key)) == value
    back = from_wire(got)  # what a daemon-side caller of the client (the CLI) sees
    assert type(back) is type(exc) and str(back) == str(exc)
    if not isinstance(exc, core.InvalidSessionIdError):  # its data carries repr(session_id), not the id
        assert back.data() == exc.data()


def test_hierarchy_is_kept_on_the_client():
    assert issubclass(wire.PredecessorMissingError, wire.InvalidNodeError)
    assert issubclass(wire.StorageFullError, wire.StorageError)
    assert all(issubclass(c, wire.SessionDagError) for c in wire.ERROR_CLASSES.values())


def test_standard_and_untyped_errors():
    assert type(wire.from_error(error_object(InvalidParams("missing param 'x'", param="x")))) is wire.InvalidParamsError
    err = error_object(InvalidParams("missing param 'x'", param="x"))
    assert err == {"code": -32602, "message": "missing param 'x'", "data": {"kind": "invalid_params", "param": "x"}}
    assert type(wire.from_error({"code": -32601, "message": "no"})) is wire.MethodNotFoundError
    assert type(wire.from_error({"code": -32800, "message": "c", "data": {"kind": "request_cancelled"}})) \
        is wire.RequestCancelledError
    internal = error_object(RuntimeError("boom"))
    assert internal["code"] == -32603 and type(wire.from_error(internal)) is wire.RpcError
    assert type(wire.from_error("junk")) is wire.RpcError
    assert error_object(OSError(errno.ENOSPC, "full"))["data"]["kind"] == "storage_full"
    assert from_wire(ValueError("x")).args == ("x",)
