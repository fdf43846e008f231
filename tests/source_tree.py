"""The daemon package's modules, read and parsed once per test process: the scans of the whole tree
(where settings are read, who sets the environment, which modules define errors, who reads frames)
share one parse instead of one each — the parse, not the scan, was their cost in `make test-fast`.
The trees are shared: a scan walks them and never changes them."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache

import sessiondag

PKG = os.path.dirname(sessiondag.__file__)


@dataclass(frozen=True)
class Source:
    rel: str        # the path under the package, with os.sep: "core/settings.py"
    path: str
    text: str
    tree: ast.Module


@lru_cache(maxsize=None)
def modules() -> tuple[Source, ...]:
    """Every .py file under the daemon package, sorted by path."""
    out = []
    for dirpath, dirs, files in os.walk(PKG):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                out.append(Source(os.path.relpath(path, PKG), path, text, ast.parse(text, path)))
    return tuple(out)


def module(rel: str) -> Source:
    """One module by its path under the package ("cli/serve.py")."""
    return next(m for m in modules() if m.rel == os.path.normpath(rel))
