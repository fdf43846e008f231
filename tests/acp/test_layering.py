"""The ACP adapter sits above rpc: it may import the ACP SDK, the Python client (the wire protocol)
and the standard library — never the daemon's store, runtime, context or rpc modules."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import sessiondag.acp

PKG = Path(sessiondag.acp.__file__).parent


def test_the_acp_package_imports_no_daemon_internals():
    allowed_top = {"acp", "sessiondag_client", "pydantic", "anyio"}
    bad = []
    for f in sorted(PKG.glob("*.py")) + [PKG.parent / "cli" / "acp.py"]:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:   # relative: inside sessiondag.acp, or the package version, or cli -> acp
                    target = (node.module or "")
                    inside = (node.level == 1 and f.parent == PKG) or \
                        (node.level == 2 and (target.startswith("acp") or (not target and
                                                                          [a.name for a in node.names] == ["__version__"])))
                    if not inside:
                        bad.append(f"{f.name}: from {'.' * node.level}{target} import …")
                    continue
                names = [node.module or ""]
            else:
                continue
            for n in names:
                top = n.split(".")[0]
                if top not in allowed_top and top not in sys.stdlib_module_names:
                    bad.append(f"{f.name}: import {n}")
    assert bad == []


def test_the_wire_depth_limit_is_the_daemons():
    """The ACP transport refuses messages nested past the wire's MAX_DEPTH; the daemon refuses node
    fields past core/depth.py's: one rule (acp may not import core, so the number is held here)."""
    from sessiondag.core.depth import MAX_DEPTH as node_depth
    from sessiondag_client.wire.codec import MAX_DEPTH as wire_depth, too_deep

    assert wire_depth == node_depth
    nest = lambda n: [nest(n - 1)] if n else 0  # noqa: E731
    assert not too_deep(nest(wire_depth)) and too_deep(nest(wire_depth + 1))
