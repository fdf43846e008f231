"""ONE error-code registry: rpc_schema/openrpc.json `components/errors`. Every other table is generated
from it or checked against it here — the Python client's (wire/error_table.py, generated), the
TypeScript client's (src/generated/protocol.ts, generated) and the daemon's (its exception classes
as `rpc/errors.error_object` sends them). No two errors share a code; the generated files are current."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import pkgutil
import re

import pytest
from source_tree import modules

import sessiondag
from sessiondag.core.errors import SessionDagError
from sessiondag.rpc import schema
from sessiondag.rpc.errors import error_object
from sessiondag_client.wire import errors as wire

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
GEN = os.path.join(ROOT, "clients", "python", "scripts", "gen_wire.py")
TS = os.path.join(ROOT, "clients", "typescript", "src", "generated", "protocol.ts")
ERRORS = schema.load()["errors"]
TYPED = {k: e for k, e in ERRORS.items() if "title" in e.get("data", {})}        # the typed kinds
UNCODED = [k for k in TYPED["sessiondag_error"]["data"]["properties"]["kind"]["enum"] if k != "sessiondag_error"]
AS_INVALID_PARAMS = {"invalid_params", "invalid_manifest"}   # daemon kinds sent as -32602 (a bad param)


def _generator():
    spec = importlib.util.spec_from_file_location("gen_wire", GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _error_modules() -> list[str]:
    """The daemon modules that define an exception class (a class with a base whose name ends in
    Error or Exception), found by parsing, not importing: importing every module (the daemon, the
    CLI, the optional extras) took seconds of the fast tier for the few that define errors."""
    found = []
    for m in modules():
        bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")
                 for n in ast.walk(m.tree) if isinstance(n, ast.ClassDef) for b in n.bases]
        if any(b.endswith(("Error", "Exception")) for b in bases):
            name = "sessiondag." + m.rel[:-3].replace(os.sep, ".")
            found.append(name[: -len(".__init__")] if name.endswith(".__init__") else name)
    return found


def _daemon_error_classes() -> dict[str, list[type]]:
    """Every SessionDagError subclass of the daemon, by its kind (`code`): each module that defines
    an exception class imported (test_the_scan_finds_every_error_module checks the scan)."""
    for name in _error_modules():
        try:
            importlib.import_module(name)
        except ImportError:   # an optional extra that is not installed
            continue
    out: dict[str, list[type]] = {}
    todo = [SessionDagError]
    while todo:
        cls = todo.pop()
        out.setdefault(cls.code, []).append(cls)
        todo += cls.__subclasses__()
    return out


def test_no_two_errors_share_a_code():
    codes = [e["code"] for e in ERRORS.values()]
    dup = sorted({c for c in codes if codes.count(c) > 1})
    assert not dup, f"codes used by more than one error: {dup}"


def test_openrpc_json_holds_every_error_the_other_documents_cite():
    """agent.json and usage.json copy the errors they cite (each document stands on its own);
    schema.load() refuses a copy that differs; openrpc.json is the registry that has them all."""
    with open(os.path.join(schema.SCHEMA_DIR, "openrpc.json"), encoding="utf-8") as f:
        registry = json.load(f)["components"]["errors"]
    assert set(registry) == set(ERRORS)


def test_every_typed_kind_names_its_class_and_a_typed_parent():
    for kind, e in TYPED.items():
        data = e["data"]
        assert data["properties"]["kind"].get("const", kind) == kind or kind == "sessiondag_error"
        assert re.fullmatch(r"[A-Z][A-Za-z]+Error", data["title"]), kind
        parent = data.get("x-parent")
        assert (parent is None) == (kind == "sessiondag_error"), kind
        assert parent is None or parent in TYPED, (kind, parent)


def test_the_generated_python_files_are_current():
    gen = _generator()
    for path, text in ((gen.PROTOCOL, gen.protocol(gen.SCHEMA_DIR)), (gen.ERROR_TABLE, gen.error_table(gen.SCHEMA_DIR)),
                       (gen.DISPATCH, gen.dispatch(gen.SCHEMA_DIR)),
                       (gen.SYNC_OVERLOADS, gen.sync_overloads(gen.SCHEMA_DIR))):
        with open(path, encoding="utf-8") as f:
            assert f.read() == text, (f"{os.path.relpath(path, ROOT)} drifted from rpc_schema/ (or client.py): "
                                      "run `python clients/python/scripts/gen_wire.py`")


def test_the_python_client_table_equals_the_schema():
    assert wire.KINDS == {k: (e["code"], e["data"]["title"], e["data"].get("x-parent")) for k, e in TYPED.items()}
    assert list(wire.UNCODED_KINDS) == UNCODED
    for name in ("parse_error", "invalid_request", "method_not_found", "invalid_params", "internal_error",
                 "server_not_initialized", "request_cancelled"):
        assert getattr(wire, name.upper()) == ERRORS[name]["code"]
    for kind, e in TYPED.items():   # what the client raises for each kind: its class, under its parent
        got = wire.from_error({"code": e["code"], "message": "m", "data": {"kind": kind}})
        assert type(got).__name__ == e["data"]["title"] and got.rpc_code == e["code"]
        parent = e["data"].get("x-parent")
        assert parent is None or isinstance(got, wire.ERROR_CLASSES[parent])


def test_the_daemon_table_equals_the_schema():
    """Each exception class of the daemon goes out with its kind's code from the schema; a kind
    without a code of its own is one sessiondag_error lists; every typed kind has a daemon class."""
    classes = _daemon_error_classes()
    assert set(classes) == set(TYPED) | set(UNCODED) | AS_INVALID_PARAMS
    for kind, found in classes.items():
        for cls in found:
            exc = cls.__new__(cls)
            Exception.__init__(exc, "m")
            obj = error_object(exc)
            if kind in AS_INVALID_PARAMS:
                assert obj["code"] == ERRORS["invalid_params"]["code"], cls
            elif kind in TYPED:
                assert obj["code"] == TYPED[kind]["code"] and obj["data"]["kind"] == kind, cls
                parent = TYPED[kind]["data"].get("x-parent")
                assert parent is None or any(getattr(b, "code", None) == parent for b in cls.__mro__[1:]), cls
            else:
                assert obj["code"] == TYPED["sessiondag_error"]["code"] and obj["data"]["kind"] == kind, cls


def _ts_classes() -> dict[str, tuple[str, int]]:
    """class -> (the class it extends, its code), as src/generated/protocol.ts declares them."""
    with open(TS, encoding="utf-8") as f:
        text = f.read()
    found = re.findall(r"export class (\w+) extends (\w+) \{\n  static readonly code: number = (-?\d+);", text)
    return {c: (parent, int(n)) for c, parent, n in found}


def _ts_table() -> tuple[dict[str, int], dict[str, str], dict[int, str]]:
    with open(TS, encoding="utf-8") as f:
        text = f.read()
    codes = {c: code for c, (_, code) in _ts_classes().items()}
    by_kind = re.search(r"ERROR_BY_KIND[^=]*= \{\n(.*?)\n\};", text, re.S).group(1)
    by_code = re.search(r"ERROR_BY_CODE[^=]*= \{\n(.*?)\n\};", text, re.S).group(1)
    return (codes,
            dict(re.findall(r"^  (\w+): (\w+),$", by_kind, re.M)),
            {int(n): c for n, c in re.findall(r"^  \[(-?\d+)\]: (\w+),$", by_code, re.M)})


def test_the_typescript_client_table_equals_the_schema():
    codes, by_kind, by_code = _ts_table()
    assert set(by_code) == {e["code"] for e in ERRORS.values()}
    for cls, code in codes.items():
        assert by_code[code] == cls
    typed_in_ts = {k for k, e in ERRORS.items() if "kind" in e.get("data", {}).get("properties", {})}
    assert set(by_kind) == typed_in_ts
    for kind, cls in by_kind.items():
        assert codes[cls] == ERRORS[kind]["code"], kind


def test_the_typescript_classes_are_the_schemas_names_and_hierarchy():
    classes = _ts_classes()
    for kind, e in TYPED.items():
        parent = e["data"].get("x-parent")
        assert classes[e["data"]["title"]] == (TYPED[parent]["data"]["title"] if parent else "SessionDagRpcError",
                                              e["code"]), kind
    assert classes["RemoteUnreachableError"][0] == "SyncError" and "SyncUnreachableError" not in classes
    for name, e in ERRORS.items():   # the standard JSON-RPC errors: their own names, under the root
        if name not in TYPED:
            assert (e["code"], "SessionDagRpcError") in {(code, p) for p, code in classes.values()}, name


def test_docs_protocol_md_lists_every_kind_with_its_code():
    """docs/protocol.md's error table: one row per typed kind, the schema's code."""
    with open(os.path.join(ROOT, "docs", "protocol.md"), encoding="utf-8") as f:
        doc = f.read()
    rows = dict((kind, int(code)) for code, kind in re.findall(r"^\| (-320\d\d) \| (\w+) \|", doc, re.M))
    assert rows == {k: e["code"] for k, e in TYPED.items()}
    for kind in UNCODED:
        assert f"`{kind}`" in doc


@pytest.mark.slow
def test_the_scan_finds_every_error_module():
    """The parse in _error_modules misses no module: with every module imported (seconds: the whole
    daemon, the CLI and the installed extras), no SessionDagError subclass is new."""
    def names() -> set[str]:
        out, todo = set(), [SessionDagError]
        while todo:
            cls = todo.pop()
            out.add(f"{cls.__module__}.{cls.__qualname__}")
            todo += cls.__subclasses__()
        return out
    _daemon_error_classes()
    scanned = names()
    for m in pkgutil.walk_packages(sessiondag.__path__, "sessiondag."):
        try:
            importlib.import_module(m.name)
        except ImportError:   # an optional extra that is not installed
            continue
    assert names() == scanned
