"""The session service is the handlers' one way into the daemon (docs/architecture.md, "Who owns what";
rpc/service.py), and the daemon's parts get only what they use. An AST scan, like tests/layer_rules.py:

- handler-import: a handler module (rpc/*_methods.py, rpc/agent_settings.py) imports none of the
  daemon's parts (PARTS) nor the daemon: it is handed `ctx.service`;
- handler-ctx: of the request context a handler reads `ctx.service`, `ctx.client` and `ctx.request_id`
  only;
- handler-service: what it reads of the service (`ctx.service.x`, or a name bound to `ctx.service`)
  is a public method or property of SessionService (never its parts: table, evictor, writes, …);
  of the store behind it only STORE_READS (the store is passed whole to library calls);
- part-daemon: a part's constructor takes no `daemon` / `service` and its module imports neither;
- daemon-service: the daemon (rpc/daemon.py), which owns the service, reads of it (`self.service.x`, or a
  name bound to `self.service`) its public API too: its figures for daemon/status come from the service.

Each rule is also run on a snippet that breaks it, so the scan cannot silently pass everything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sessiondag

RPC = Path(sessiondag.__file__).parent / "rpc"
PARTS = {"daemon", "service", "session_table", "eviction", "write_queue", "disk_events", "notifier", "lifecycle",
         "agent_state", "agent_mcp", "auto_push", "connection", "transports"}
PART_MODULES = ["session_table", "eviction", "write_queue", "disk_events", "notifier", "auto_push", "agent_state",
                "agent_mcp"]
CTX_FIELDS = {"service", "client", "request_id"}
STORE_READS = {"state_dir", "settings"}
DAEMON_READS = {"connections"}   # the clients' set, kept by the service (the notifier's budget spans them)


def handler_modules() -> list[Path]:
    return sorted([*RPC.glob("*_methods.py"), RPC / "agent_settings.py"])


def service_api() -> set[str]:
    """Public methods and properties of SessionService (rpc/service.py)."""
    tree = ast.parse((RPC / "service.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SessionService")
    return {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not n.name.startswith("_")}


def _is_ctx_service(node: ast.AST, aliases: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in aliases
    return (isinstance(node, ast.Attribute) and node.attr == "service" and isinstance(node.value, ast.Name)
            and node.value.id == "ctx")


def handler_violations(source: str, api: set[str]) -> list[str]:
    tree = ast.parse(source)
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level >= 1:
            mods = [n.module] if n.module else [a.name for a in n.names]
            for m in mods:
                if m and m.split(".")[0] in PARTS and n.level == 1:
                    found.append(f"{n.lineno}: handler-import {m}")
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("sessiondag.rpc."):
            if n.module.split(".")[2] in PARTS:
                found.append(f"{n.lineno}: handler-import {n.module}")
    aliases = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _is_ctx_service(n.value, set())
               for t in n.targets if isinstance(t, ast.Name)}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Attribute):
            continue
        if isinstance(n.value, ast.Name) and n.value.id == "ctx" and n.attr not in CTX_FIELDS:
            found.append(f"{n.lineno}: handler-ctx ctx.{n.attr}")
        elif _is_ctx_service(n.value, aliases) and n.attr not in api:
            found.append(f"{n.lineno}: handler-service .{n.attr}")
        elif (isinstance(n.value, ast.Attribute) and n.value.attr == "store" and _is_ctx_service(n.value.value, aliases)
              and n.attr not in STORE_READS):
            found.append(f"{n.lineno}: handler-service .store.{n.attr}")
    return found


def part_violations(source: str) -> list[str]:
    tree = ast.parse(source)
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.level == 1 and (n.module or "") in ("daemon", "service"):
            found.append(f"{n.lineno}: part-daemon imports .{n.module}")
        if isinstance(n, ast.FunctionDef) and n.name == "__init__":
            for a in [*n.args.args, *n.args.kwonlyargs]:
                if a.arg in ("daemon", "service"):
                    found.append(f"{n.lineno}: part-daemon takes {a.arg}")
    return found


def daemon_violations(source: str, api: set[str]) -> list[str]:
    tree = ast.parse(source)

    def is_service(node: ast.AST, aliases: set[str]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in aliases
        return (isinstance(node, ast.Attribute) and node.attr == "service" and isinstance(node.value, ast.Name)
                and node.value.id == "self")
    aliases = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and is_service(n.value, set())
               for t in n.targets if isinstance(t, ast.Name)}
    return [f"{n.lineno}: daemon-service .{n.attr}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and is_service(n.value, aliases) and n.attr not in api | DAEMON_READS]


@pytest.mark.parametrize("path", handler_modules(), ids=lambda p: p.name)
def test_handlers_reach_the_daemon_only_through_the_service(path):
    assert handler_violations(path.read_text(), service_api()) == []


@pytest.mark.parametrize("name", PART_MODULES)
def test_parts_get_only_what_they_use(name):
    assert part_violations((RPC / f"{name}.py").read_text()) == []


def test_the_daemon_reads_the_service_through_its_api():
    assert daemon_violations((RPC / "daemon.py").read_text(), service_api()) == []


def test_the_service_api_is_what_handlers_use():
    api = service_api()
    assert {"open", "get", "read", "write", "submit", "reset", "subscribe", "unsubscribe", "lock"} <= api
    assert not api & {"table", "evictor", "writes", "notifier", "disk", "binding", "attribution"}


def test_the_rules_catch_what_they_forbid():
    api = service_api()
    bad = """
from .session_table import SessionTable
from sessiondag.rpc.eviction import Evictor
async def h(ctx, params):
    d = ctx.service
    d.table.deleted.pop("x", None)
    ctx.service.evictor.enforce(want_fds=8)
    ctx.daemon.get_session("x")
    ctx.service.store.reset_session("x")
    ctx.service.get("x")
"""
    got = sorted(g.split(": ", 1)[1] for g in handler_violations(bad, api))
    assert got == sorted(["handler-import session_table", "handler-import sessiondag.rpc.eviction",
                          "handler-service .table", "handler-service .evictor", "handler-ctx ctx.daemon",
                          "handler-service .store.reset_session"])
    assert sorted(daemon_violations("class D:\n    def f(self):\n        svc = self.service\n        svc.table.sizes()\n"
                                    "        self.service.evictor.run\n        svc.tables()\n", api)) == [
        "4: daemon-service .table", "5: daemon-service .evictor"]
    assert part_violations("from .daemon import Daemon\nclass P:\n    def __init__(self, daemon):\n        pass\n") == [
        "1: part-daemon imports .daemon", "3: part-daemon takes daemon"]
