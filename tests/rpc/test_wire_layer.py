"""The wire layer is the bottom of the client distribution: it imports the standard library, orjson and
anyio only (nothing of the client around it, nothing of the daemon); the client imports no daemon module."""

import ast
import glob
import os
import sys

import sessiondag_client

CLIENT = os.path.dirname(sessiondag_client.__file__)
ALLOWED_THIRD_PARTY = {"orjson", "anyio"}


def _imports(path):
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            yield from ((a.name, 0) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", node.level


def test_wire_imports_only_stdlib_orjson_anyio_and_itself():
    files = glob.glob(os.path.join(CLIENT, "wire", "*.py"))
    assert {os.path.basename(f) for f in files} >= {"__init__.py", "codec.py", "errors.py", "types.py"}
    for f in files:
        for name, level in _imports(f):
            top = name.split(".")[0]
            if level:  # relative: only within wire/
                assert level == 1, f"{f} reaches out of the wire package: {'.' * level}{name}"
            else:
                assert top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY, f"{f} imports {name}"


def test_client_imports_nothing_from_the_daemon():
    for f in glob.glob(os.path.join(CLIENT, "**", "*.py"), recursive=True):
        for name, level in _imports(f):
            assert level or name.split(".")[0] != "sessiondag", f"{f} imports {name}"
