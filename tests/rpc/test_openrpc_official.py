"""rpc_schema/ is usable by the ecosystem's own tooling: the bundled document is current, the official
Open-RPC tools (@open-rpc/schema-utils-js, installed by mk/schema.mk) validate and dereference it, and
every source document stands on its own."""

import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from sessiondag.rpc import schema, schema_bundle
from setup_check import setup_failed

CHECK_DIR = os.path.join(os.path.dirname(__file__), "..", "openrpc")
SOURCES = sorted(glob.glob(os.path.join(schema.SCHEMA_DIR, "*.json")))
BUNDLE = os.path.join(schema.SCHEMA_DIR, schema_bundle.BUNDLE_PATH)


def _official(*args: str) -> dict:
    node = shutil.which("node")
    modules = os.path.join(CHECK_DIR, "node_modules", "@open-rpc", "schema-utils-js")
    if node is None or not os.path.isdir(modules):
        setup_failed(f"the Open-RPC tools (node, and `npm ci` in {os.path.normpath(CHECK_DIR)}: mk/schema.mk)",
                     "openrpc-install")
    out = subprocess.run([node, os.path.join(CHECK_DIR, "check.mjs"), *args], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_bundle_is_generated_from_the_sources():
    with open(BUNDLE, "rb") as f:
        committed = f.read()
    assert committed == schema_bundle.encode(schema_bundle.bundle()), (
        "rpc_schema/bundle/ drifted from rpc_schema/: run `python -m sessiondag.rpc.schema_bundle --write`")


@pytest.mark.process
def test_official_tools_validate_and_dereference_the_bundle():
    assert _official(BUNDLE) == {"ok": True, "methods": len(schema.load()["methods"])}


@pytest.mark.parametrize("path", SOURCES, ids=os.path.basename)
@pytest.mark.process
def test_official_meta_schema_accepts_each_source_document(path):
    assert _official("--validate", path)["ok"] is True


@pytest.mark.parametrize("path", SOURCES + [BUNDLE], ids=os.path.basename)
def test_internal_references_resolve_inside_their_own_document(path):
    with open(path) as f:
        doc = json.load(f)
    for ref in set(re.findall(r'"\$ref": "#/([^"]+)"', json.dumps(doc))):
        node = doc
        for part in ref.split("/"):
            assert isinstance(node, dict) and part in node, f"{os.path.basename(path)}: #/{ref} is not in it"
            node = node[part]


def _arrays_without_items(node, where=""):
    if isinstance(node, dict):
        t = node.get("type")
        if (t == "array" or (isinstance(t, list) and "array" in t)) and not ({"items", "prefixItems"} & set(node)):
            yield where
        for k, v in node.items():
            yield from _arrays_without_items(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _arrays_without_items(v, f"{where}/{i}")


def test_every_array_schema_declares_its_items():
    paths = SOURCES + sorted(glob.glob(os.path.join(schema.SCHEMA_DIR, "schemas", "*.json")))
    missing = [f"{os.path.basename(p)}{w}" for p in paths for w in _arrays_without_items(json.load(open(p)))]
    assert missing == []
