"""SyncClient's blocking overloads, generated (gen_wire.py calls `sync_overloads`): AsyncClient's
overloaded methods read with `ast` from client.py and from the generated wire/dispatch.py, written
again as SyncClient's blocking signatures (sessiondag_client/sync_overloads.py)."""

from __future__ import annotations

import ast


def overloaded(source: str, cls: str) -> list[tuple[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]]:
    """The overloaded methods of class `cls` in `source`: (name, its overloads then its implementation)."""
    body = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls).body
    defs = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    names = [d.name for d in defs if any(ast.unparse(x) == "overload" for x in d.decorator_list)]
    return [(name, [d for d in defs if d.name == name]) for name in dict.fromkeys(names)]


def _imported(source: str, package: str) -> dict[str, str]:
    """name -> `from <module> import <name>` line for what `source` (a module of `package`) imports."""
    out = {}
    for n in ast.parse(source).body:
        if isinstance(n, ast.ImportFrom) and n.module != "__future__":
            module = "." * n.level + (n.module or "")
            if n.level == 1 and package:           # relative to the module's package: one level up here
                module = "." + package + (("." + n.module) if n.module else "")
            for a in n.names:
                out[a.asname or a.name] = f"from {module} import {a.name}" + (f" as {a.asname}" if a.asname else "")
    return out


def _signature(d: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """`def name(params) -> result: ...` of `d`, not async, wrapped at a parameter under 110 columns."""
    a = d.args
    params: list[str] = []

    def one(arg: ast.arg, default: ast.expr | None) -> str:
        text = arg.arg + (f": {ast.unparse(arg.annotation)}" if arg.annotation is not None else "")
        if default is not None:
            text += (" = " if arg.annotation is not None else "=") + ast.unparse(default)
        return text
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + [*a.defaults]
    params += [one(arg, dflt) for arg, dflt in zip(positional, defaults)]
    if a.vararg is not None:
        params.append("*" + one(a.vararg, None))
    elif a.kwonlyargs:
        params.append("*")
    params += [one(arg, dflt) for arg, dflt in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg is not None:
        params.append("**" + one(a.kwarg, None))
    head, tail = f"        def {d.name}(", f") -> {ast.unparse(d.returns) if d.returns else 'None'}: ..."
    lines, line = [], head
    for i, p in enumerate(params):
        piece = p + (", " if i < len(params) - 1 else "")
        if len(line) + len(piece.rstrip()) + (len(tail) if i == len(params) - 1 else 0) > 110 and line.strip() != head.strip():
            lines.append(line.rstrip())
            line = " " * len(head) + piece
        else:
            line += piece
    lines.append(line + tail)
    return "\n".join(lines)


def sync_overloads(client_path: str, wire_dispatch: str, header: str) -> str:
    """sessiondag_client/sync_overloads.py: `BlockingOverloads`, AsyncClient's overloaded methods
    (client.py's own at `client_path`, and TypedDispatch's in `wire_dispatch`, the text gen_wire.py's
    dispatch() writes) with their overloads, blocking; `header`: the generated files' first line."""
    with open(client_path, encoding="utf-8") as f:
        client = f.read()
    methods = overloaded(client, "AsyncClient") + overloaded(wire_dispatch, "TypedDispatch")
    known = {**_imported(wire_dispatch, "wire"), **_imported(client, "")}
    used = sorted({n.id for _, defs in methods for d in defs for n in ast.walk(d.args) if isinstance(n, ast.Name)}
                  | {n.id for _, defs in methods for d in defs if d.returns for n in ast.walk(d.returns)
                     if isinstance(n, ast.Name)})
    typing_names = sorted({"TYPE_CHECKING", "overload"} | {n for n in used if n in ("Any", "Literal")})
    imports = sorted({known[n] for n in used if n in known and n not in typing_names})
    blocking = [name for name, defs in methods if isinstance(defs[-1], ast.AsyncFunctionDef)]
    on_loop = [name for name, defs in methods if not isinstance(defs[-1], ast.AsyncFunctionDef)]
    lines = [header.replace("from rpc_schema/", "from rpc_schema/ and sessiondag_client/client.py") +
             '"""SyncClient\'s overloaded methods: each overloaded method of AsyncClient (client.py\'s own, and\n'
             'wire/dispatch.py\'s `on_request` / `next_notification`) with the same overloads, blocking. SyncClient\n'
             'subclasses `BlockingOverloads` (what a type checker reads) and, at run time, runs AsyncClient\'s method\n'
             'of each name on the client\'s loop (sync.py: BLOCKING through `_Blocking`, ON_LOOP through `_OnLoop`)."""\n',
             "from __future__ import annotations\n",
             f"from typing import {', '.join(typing_names)}\n",
             *imports, "",
             f"BLOCKING = {tuple(blocking)!r}   # coroutine methods of AsyncClient: SyncClient blocks on them",
             f"ON_LOOP = {tuple(on_loop)!r}   # plain methods of AsyncClient: SyncClient calls them on its loop\n\n",
             "class BlockingOverloads:",
             '    """AsyncClient\'s overloaded methods, blocking (their overloads only: SyncClient runs them)."""\n',
             "    if TYPE_CHECKING:"]
    for name, defs in methods:
        for d in defs[:-1]:
            lines += ["        @overload", _signature(d)]
        lines += [_signature(defs[-1]), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
