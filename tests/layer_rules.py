"""The layer rules (docs/architecture.md "Layers"), checked by tests/test_layers.py: an AST scan of every
module of the daemon package and of the Python client. Rules, each failure names file, line and rule:

- layer-order: a package imports only the packages its layer may (LAYERS below):
  core ← store ← context ← runtime ← rpc ← (acp, cli); workspace beside store (core only; runtime and up may import it);
  integrations above context (the library API: core, store, context's store factory and the `sessiondag` root);
  sync above store and context (core, store, context), below rpc and cli;
  report above runtime and sync, beside rpc (core … runtime, sync, the client), below cli.
  Every import counts: top level, inside functions, under `if`/`try`. `from sessiondag import
  __version__` is allowed everywhere.
- client-alone: `sessiondag_client` (clients/python) imports nothing from `sessiondag`.
- private-import: `from X import _name` (or `import X._mod`) where X is another package.
- private-attr: `name._attr` where `name` was imported from another package (a module or an object
  of it). What this cannot see: `obj._attr` on an object that reached the code some other way
  (`self.store._open`); the private-attr-heuristic rule below catches the common form of those.
- private-attr-heuristic: `expr._attr` (expr not `self`/`cls`) where `_attr` is not a private name
  the reading package defines anywhere (as a function, class, module or class attribute or
  `self._attr = …`): a private name of another package, or of a library (`PRIVATE_LIBRARY_ATTRS`).
- import-cycle: the module import graph, counting imports inside functions, has no cycle (so no
  in-function import can be dodging one).
- injected: the agent loop imports neither ask_user, the sub-agents nor the Runtime (NOT_IMPORTED):
  its tools are injected (`rt.tools`).
- function-import: no import inside a function, except (a) in cli/ and acp/, the top of the stack,
  whose commands import lazily to start fast (nothing imports them back, and import-cycle proves
  they dodge nothing), (b) optional third-party dependencies (OPTIONAL_DEPS: imported where used so
  that `import sessiondag` never needs them) and (c) the standard library (it cannot take part in
  a cycle of ours). A first-party function import anywhere else fails even if it dodges no cycle
  today.

The "package" of a module is its first component below `sessiondag` (core, store, …); the root
`sessiondag/__init__.py` is part of core (it re-exports core only). ALLOWED_VIOLATIONS lists what is
still there at the time of writing, each with who removes it: an entry that no longer matches
fails too (delete it when you remove the violation).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import sessiondag
import sessiondag_client

PKG = Path(sessiondag.__file__).parent
CLIENT = Path(sessiondag_client.__file__).parent

FIRST_PARTY = ("sessiondag", "sessiondag_client")

# package -> the packages it may import (itself always). "client" is sessiondag_client.
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "store": {"core"},
    "workspace": {"core"},
    "context": {"core", "store"},
    "runtime": {"core", "store", "workspace", "context"},  # workspace: confined file access (beneath)
    "integrations": {"core", "store", "context"},   # context: open_store, the application's commit hooks
    "sync": {"core", "store", "context"},   # sessions through git remotes: above store, below rpc and cli
    "rpc": {"core", "store", "workspace", "context", "runtime", "sync", "client"},
    "acp": {"client"},                      # the wire protocol only (tests/acp/test_layering.py)
    # reports for people (docs/report.md): read a session like `sessions export` does (store, context's
    # views and ledger, runtime's checkpoint diffs, sync's title rule); the live bridge talks to the
    # daemon as a client does (sessiondag_client), never through rpc's internals
    "report": {"core", "store", "workspace", "context", "runtime", "sync", "client"},
    "cli": {"core", "store", "workspace", "context", "runtime", "rpc", "acp", "integrations", "sync", "client",
            "report"},
    "client": set(),                        # clients/python: nothing of the daemon package
}

# Module pairs that must stay apart although no cycle would forbid it (rule "injected"): the loop
# is given its tools by the Runtime (rt.tools) instead of importing ask_user and the sub-agents.
NOT_IMPORTED: dict[str, set[str]] = {
    "sessiondag.runtime.loop": {"sessiondag.runtime.ask_user", "sessiondag.runtime.subagents",
                                "sessiondag.runtime.runtime"},
}

# Optional third-party dependencies, and required ones a command may never need: imported inside the
# function that needs them.
OPTIONAL_DEPS = {
    "openai", "anthropic",                  # providers (pip extras openai, anthropic)
    "langgraph", "langchain_core",          # integrations/langgraph (extra langgraph)
    "agents",                               # integrations/agents (extra agents)
    "acp", "pydantic",                      # the ACP adapter (extra acp)
    "mcp", "mcp_types", "httpx2",           # MCP servers of a session (extra mcp; runtime/mcp_servers.py)
    "trio",                                 # the Python client under anyio's trio backend (background.py)
    "msgspec",                              # the client's typed get_branch decode, loaded with the first
                                            # big branch, not at import (branch_decode.py)
    "yaml",                                 # a YAML answers file or script (runtime/ask_user.py,
                                            # providers/scripted.py), loaded with the first one read, not
                                            # at start-up (tests/cli/test_run_parent_imports.py)
}

# Private attributes of libraries that we read on purpose (a dependency whose private API we use
# carries an upper bound in pyproject.toml: dulwich <1.3).
PRIVATE_LIBRARY_ATTRS = {
    "_exit",          # os._exit in forked / exec'd children
    "_asdict", "_replace", "_fields",   # namedtuple API
    "_getframe",      # sys._getframe
    # dulwich's object store and packs (store/packs.py: packing loose bodies, merging packs)
    "_iter_loose_objects", "_get_loose_object", "_remove_pack", "_data_path", "_idx_path", "_basename",
    "_pack_cache",    # the packs dulwich has open (a pack merged from memory is closed through it)
    "_close",         # dulwich's Protocol close (sync/transport.py: the ssh process a stalled read kills)
}

# Violations tolerated for now. Each entry: (rule, file relative to the package root, detail) -> who
# removes it. Empty since issue 9's refactor landed: keep it so, and never grow it without a reason.
ALLOWED_VIOLATIONS: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class Violation:
    rule: str
    file: str       # relative to daemon/ or clients/python/
    line: int
    detail: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rule, self.file, self.detail)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: [{self.rule}] {self.detail}"


@dataclass(eq=False)
class Module:
    name: str           # dotted: sessiondag.runtime.loop
    rel: str            # sessiondag/runtime/loop.py
    is_pkg: bool
    source: str

    @property
    def package(self) -> str:
        return package_of(self.name)


def package_of(dotted: str) -> str:
    parts = dotted.split(".")
    if parts[0] == "sessiondag_client":
        return "client"
    if len(parts) == 1:
        return "core"       # the root package re-exports core only
    return parts[1]


def load_modules(roots: list[Path] | None = None) -> dict[str, Module]:
    mods: dict[str, Module] = {}
    for root in roots or [PKG, CLIENT]:
        base = root.parent
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(base)
            parts = list(rel.with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join(parts)] = Module(".".join(parts), rel.as_posix(), is_pkg, path.read_text(encoding="utf-8"))
    return mods


def with_source(mods: dict[str, Module], rel: str, source: str) -> dict[str, Module]:
    """A copy of `mods` in which the module at `rel` has `source` (the others keep their scans)."""
    out = dict(mods)
    for name, m in mods.items():
        if m.rel == rel:
            out[name] = Module(m.name, m.rel, m.is_pkg, source)
            return out
    raise KeyError(rel)


@dataclass(frozen=True)
class Import:
    line: int
    target: str             # the module imported (a submodule when `from pkg import submodule`)
    names: tuple[str, ...]  # the names taken from it (`from x import a, b`); () for `import x`
    bound: tuple[str, ...]  # the local names it binds
    in_function: bool


@dataclass(frozen=True)
class PrivateAttr:
    line: int
    base: str | None        # the name the attribute is read on (`x` in `x._a`), None for other bases
    attr: str
    text: str


@dataclass
class Scan:
    imports: list[tuple[int, int, str | None, tuple[tuple[str, str | None], ...], bool]]
    attrs: list[PrivateAttr]
    private_defs: set[str]


class _Scanner(ast.NodeVisitor):
    """One pass over a module: its imports (and whether inside a function), the `_private`
    attributes it reads, and the private names it defines."""

    def __init__(self) -> None:
        self.depth = 0
        self.scan = Scan([], [], set())

    def _def(self, name: str) -> None:
        if is_private(name):
            self.scan.private_defs.add(name)

    def _function(self, node: ast.AST) -> None:
        self._def(getattr(node, "name", ""))
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._def(node.name)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.scan.imports.append((node.lineno, 0, None, tuple((a.name, a.asname) for a in node.names),
                                  self.depth > 0))
        for a in node.names:
            self._def(a.asname or a.name.split(".")[-1])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self.scan.imports.append((node.lineno, node.level, node.module,
                                  tuple((a.name, a.asname) for a in node.names), self.depth > 0))
        for a in node.names:
            self._def(a.asname or a.name)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self._def(node.id)

    def visit_arg(self, node: ast.arg) -> None:
        self._def(node.arg)
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg:
            self._def(node.arg)  # dataclass fields built by keyword, namedtuple(_x=…)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if is_private(node.attr):
            if isinstance(node.ctx, ast.Store):
                self._def(node.attr)
            else:
                base = node.value.id if isinstance(node.value, ast.Name) else None
                self.scan.attrs.append(PrivateAttr(node.lineno, base, node.attr, ast.unparse(node)))
        self.generic_visit(node)


_SCANS: dict[int, tuple[Module, Scan]] = {}


def scan_of(mod: Module) -> Scan:
    hit = _SCANS.get(id(mod))
    if hit is None or hit[0] is not mod:
        scanner = _Scanner()
        scanner.visit(ast.parse(mod.source, mod.rel))
        scanner.scan.private_defs.update(p for p in Path(mod.rel).with_suffix("").parts if is_private(p))
        hit = _SCANS[id(mod)] = (mod, scanner.scan)
    return hit[1]


def imports_of(mod: Module, mods: dict[str, Module]) -> list[Import]:
    out = []
    for line, level, module, names, in_fn in scan_of(mod).imports:
        if not level and module is None:        # `import a.b as c`
            for name, asname in names:
                out.append(Import(line, name, (), (asname or name.split(".")[0],), in_fn))
            continue
        if level:
            base = mod.name.split(".") if mod.is_pkg else mod.name.split(".")[:-1]
            base = base[:len(base) - (level - 1)]
            target = ".".join(base + ([module] if module else []))
        else:
            target = module or ""
        plain = []
        for name, asname in names:
            sub = f"{target}.{name}"
            if sub in mods:         # `from pkg import submodule`: an import of that module
                out.append(Import(line, sub, (), (asname or name,), in_fn))
            else:
                plain.append((name, asname))
        if plain:
            out.append(Import(line, target, tuple(n for n, _ in plain), tuple(a or n for n, a in plain), in_fn))
    return out


def first_party(target: str) -> bool:
    return target.split(".")[0] in FIRST_PARTY


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(mods: dict[str, Module]) -> list[Violation]:
    found: list[Violation] = []
    graph: dict[str, set[str]] = {m: set() for m in mods}
    edge_line: dict[tuple[str, str], tuple[str, int]] = {}
    private_defs: dict[str, set[str]] = {}
    for m in mods.values():
        private_defs.setdefault(m.package, set()).update(scan_of(m).private_defs)
    for m in mods.values():
        here = m.package
        foreign_bound: dict[str, str] = {}   # local name -> the other package it came from
        for imp in imports_of(m, mods):
            top = imp.target.split(".")[0]
            if first_party(imp.target):
                there = package_of(imp.target)
                if imp.target in mods:
                    graph[m.name].add(imp.target)
                    edge_line.setdefault((m.name, imp.target), (m.rel, imp.line))
                version_only = imp.target == "sessiondag" and imp.names == ("__version__",)
                if there != here and not version_only:
                    if here == "client":
                        found.append(Violation("client-alone", m.rel, imp.line,
                                               f"sessiondag_client imports {imp.target}"))
                    elif there not in LAYERS[here]:
                        found.append(Violation("layer-order", m.rel, imp.line,
                                               f"{here} may not import {there} ({imp.target})"))
                    for n in imp.names:
                        if is_private(n):
                            found.append(Violation("private-import", m.rel, imp.line,
                                                   f"from {imp.target} import {n}"))
                    for seg in imp.target.split(".")[1:]:
                        if is_private(seg):
                            found.append(Violation("private-import", m.rel, imp.line, f"import {imp.target}"))
                    for b in imp.bound:
                        foreign_bound[b] = there
                if imp.target in NOT_IMPORTED.get(m.name, ()):
                    found.append(Violation("injected", m.rel, imp.line,
                                           f"{m.name} must not import {imp.target} (it is given what it needs)"))
                if imp.in_function and here not in ("cli", "acp"):
                    found.append(Violation("function-import", m.rel, imp.line,
                                           f"import of {imp.target} inside a function"))
            elif imp.in_function and here not in ("cli", "acp") and top not in OPTIONAL_DEPS \
                    and top not in sys.stdlib_module_names:
                found.append(Violation("function-import", m.rel, imp.line,
                                       f"{imp.target} is not an optional dependency (OPTIONAL_DEPS)"))
        own = private_defs.get(here, set())
        for pa in scan_of(m).attrs:
            if pa.base in foreign_bound:
                found.append(Violation("private-attr", m.rel, pa.line,
                                       f"{pa.base}.{pa.attr} ({pa.base} comes from {foreign_bound[pa.base]})"))
            elif pa.base in ("self", "cls"):
                continue
            elif pa.attr not in own and pa.attr not in PRIVATE_LIBRARY_ATTRS:
                found.append(Violation("private-attr-heuristic", m.rel, pa.line,
                                       f"{pa.text}: {pa.attr} is no private name of {here}"))
    for cycle in cycles(graph):
        rel, line = edge_line[(cycle[0], cycle[1])]
        found.append(Violation("import-cycle", rel, line, " -> ".join(cycle)))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (or a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            strong(v)
    out = []
    for comp in comps:
        members = set(comp)
        if len(comp) == 1 and comp[0] not in graph[comp[0]]:
            continue
        start = min(comp)       # a concrete cycle through the component, for the message
        path, seen = [start], {start}
        while True:
            nxt = sorted(w for w in graph[path[-1]] if w in members)
            back = [w for w in nxt if w == start]
            if back and len(path) > 1 or (back and len(comp) == 1):
                out.append(path + [start])
                break
            fresh = [w for w in nxt if w not in seen]
            if not fresh:
                out.append(path + [nxt[0]])
                break
            path.append(fresh[0])
            seen.add(fresh[0])
    return out


def report(found: list[Violation]) -> str:
    """The failure message ('' = the layers hold): new violations, then stale allowlist entries."""
    new = [v for v in found if v.key not in ALLOWED_VIOLATIONS]
    present = {v.key for v in found}
    stale = [k for k in ALLOWED_VIOLATIONS if k not in present]
    msg = []
    if new:
        msg.append("layer rule violations (see the rules in tests/layer_rules.py and docs/architecture.md):")
        msg += [f"  {v}" for v in sorted(new, key=lambda v: (v.file, v.line))]
    if stale:
        msg.append("ALLOWED_VIOLATIONS entries that no longer occur (delete them from tests/layer_rules.py):")
        msg += [f"  {k} (was: {ALLOWED_VIOLATIONS[k]})" for k in stale]
    return "\n".join(msg)
