"""One self-contained OpenRPC document made from rpc_schema/, for the ecosystem's own tooling.

rpc_schema/ is written as several OpenRPC documents (openrpc.json, agent.json) that share JSON Schemas
in rpc_schema/schemas/. Tools such as `@open-rpc/schema-utils-js` want one document whose references
all resolve inside it: this module merges the documents and moves every shared schema under
`components/schemas`, rewriting `schemas/x.json` / `x.json` references to `#/components/schemas/x`.
The result is committed as rpc_schema/bundle/sessiondag.openrpc.json; a test fails when it drifts.

    python -m sessiondag.rpc.schema_bundle            # print the bundle
    python -m sessiondag.rpc.schema_bundle --write    # (re)write rpc_schema/bundle/…
"""

from __future__ import annotations

import glob
import os
import sys
from collections.abc import Mapping
from typing import Any

import orjson

from .schema import SCHEMA_DIR, Json

BUNDLE_PATH = os.path.join("bundle", "sessiondag.openrpc.json")


def _read(path: str) -> Any:   # an rpc_schema document, indexed as OpenRPC (schema.py: Json)
    with open(path, "rb") as f:
        return orjson.loads(f.read())


def _to_components(node: Json) -> Json:
    if isinstance(node, dict):
        out = {k: _to_components(v) for k, v in node.items() if k not in ("$schema", "$id")}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.endswith(".json"):
            out["$ref"] = f"#/components/schemas/{os.path.basename(ref)[:-5]}"
        return out
    if isinstance(node, list):
        return [_to_components(v) for v in node]
    return node


def bundle(schema_dir: str = SCHEMA_DIR) -> dict[str, Json]:
    """The merged document: openrpc.json's header, every document's methods, one components section."""
    docs = [(p, _read(p)) for p in sorted(glob.glob(os.path.join(schema_dir, "*.json")))]
    docs = [(p, d) for p, d in docs if isinstance(d, dict) and "openrpc" in d]
    main = next(d for p, d in docs if os.path.basename(p) == "openrpc.json")
    methods: list[Json] = []
    errors: dict[str, Json] = {}
    schemas = {os.path.basename(p)[:-5]: _to_components(_read(p))
               for p in sorted(glob.glob(os.path.join(schema_dir, "schemas", "*.json")))}
    for path, doc in [(p, d) for p, d in docs if d is main] + [(p, d) for p, d in docs if d is not main]:
        methods += [_to_components(m) for m in doc.get("methods", [])]
        for name, err in doc.get("components", {}).get("errors", {}).items():
            if name in errors and errors[name] != _to_components(err):
                raise ValueError(f"{path}: error {name!r} differs from its definition in another document")
            errors[name] = _to_components(err)
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            schemas.setdefault(name, _to_components(schema))
    return {"openrpc": main["openrpc"], "info": main["info"], "methods": methods,
            "components": {"schemas": schemas, "errors": errors}}


def encode(doc: Mapping[str, Json]) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


def main(argv: list[str]) -> int:
    data = encode(bundle())
    if argv == ["--write"]:
        with open(os.path.join(SCHEMA_DIR, BUNDLE_PATH), "wb") as f:
            f.write(data)
        return 0
    if argv:
        print("usage: python -m sessiondag.rpc.schema_bundle [--write]", file=sys.stderr)
        return 2
    sys.stdout.buffer.write(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
