"""Load the rpc_schema/ contract: every OpenRPC document `rpc_schema/*.json`, merged, with all
`$ref`s to `schemas/*.json` inlined as `#/$defs/<name>` so one self-contained JSON Schema per
method result / notification can be handed to any validator (jsonschema is used in tests only).
"""

from __future__ import annotations

import copy
import glob
import os
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import orjson

def _default_dir() -> str:
    """rpc_schema/ beside the source tree (editable install), else the copy shipped in the wheel."""
    source = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "rpc_schema"))
    if os.path.isdir(source):
        return source
    return os.path.join(os.path.dirname(os.path.dirname(__file__)), "rpc_schema")


SCHEMA_DIR = os.environ.get("SESSIONDAG_RPC_SCHEMA") or _default_dir()

# A JSON value as a document of rpc_schema/ holds it. What `load` and the schemas built from it give
# are `dict[str, Any]`: OpenRPC documents and JSON Schemas indexed by the structure those standards
# give them (tests/rpc/test_openrpc_official.py checks the documents against the OpenRPC meta-schema),
# not narrowed at each step.
Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]


def _read(path: str) -> Any:
    with open(path, "rb") as f:
        return orjson.loads(f.read())


def _rewrite(node: Json) -> Json:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.endswith(".json"):
            return {**{k: _rewrite(v) for k, v in node.items() if k != "$ref"},
                    "$ref": f"#/$defs/{os.path.basename(ref)[:-5]}"}
        return {k: _rewrite(v) for k, v in node.items() if k not in ("$schema", "$id")}
    if isinstance(node, list):
        return [_rewrite(v) for v in node]
    return node


@lru_cache(maxsize=4)
def load(schema_dir: str = SCHEMA_DIR) -> dict[str, Any]:
    """{"methods": {name: method}, "errors": {name: error}, "defs": {name: schema}, "documents": [paths]}."""
    defs = {os.path.basename(p)[:-5]: _rewrite(_read(p))
            for p in sorted(glob.glob(os.path.join(schema_dir, "schemas", "*.json")))}
    methods: dict[str, Any] = {}
    errors: dict[str, Any] = {}
    docs = []
    for path in sorted(glob.glob(os.path.join(schema_dir, "*.json"))):
        doc = _read(path)
        if not isinstance(doc, dict) or "openrpc" not in doc:
            continue
        docs.append(path)
        for name, err in doc.get("components", {}).get("errors", {}).items():
            if name in errors and errors[name] != _rewrite(err):
                raise ValueError(f"{path}: error {name!r} differs from its definition in another document")
            errors[name] = _rewrite(err)
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            defs.setdefault(name, _rewrite(schema))
        for m in doc.get("methods", []):
            if m["name"] in methods:
                raise ValueError(f"{path}: method {m['name']!r} is defined twice in rpc_schema")
            methods[m["name"]] = _rewrite(m)
    return {"methods": methods, "errors": errors, "defs": defs, "documents": docs}


def kind(m: Mapping[str, object]) -> str:
    return str(m.get("x-kind", "request"))


def request_methods(schema_dir: str = SCHEMA_DIR) -> set[str]:
    """Client→server requests: the set the daemon must serve exactly."""
    return {n for n, m in load(schema_dir)["methods"].items() if kind(m) == "request"}


def notification_methods(schema_dir: str = SCHEMA_DIR) -> set[str]:
    return {n for n, m in load(schema_dir)["methods"].items() if kind(m) == "notification"}


def _standalone(schema: object, schema_dir: str) -> dict[str, Any]:
    out = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    out["$defs"] = {**load(schema_dir)["defs"], **out.get("$defs", {})}
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return out


def result_schema(method: str, schema_dir: str = SCHEMA_DIR) -> dict[str, Any]:
    return _standalone(load(schema_dir)["methods"][method]["result"]["schema"], schema_dir)


def params_schema(method: str, schema_dir: str = SCHEMA_DIR) -> dict[str, Any]:
    """The params of a method (or notification) as one object schema."""
    m = load(schema_dir)["methods"][method]
    props = {p["name"]: p.get("schema", {}) for p in m.get("params", [])}
    req = [p["name"] for p in m.get("params", []) if p.get("required")]
    return _standalone({"type": "object", "properties": props, "required": req, "additionalProperties": False},
                       schema_dir)


def error_schema(schema_dir: str = SCHEMA_DIR) -> dict[str, Any]:
    return _standalone({"$ref": "#/$defs/error"}, schema_dir)


def error_codes(schema_dir: str = SCHEMA_DIR) -> dict[int, dict[str, Any]]:
    return {e["code"]: e for e in load(schema_dir)["errors"].values()}
