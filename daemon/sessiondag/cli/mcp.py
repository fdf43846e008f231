"""`sessiondag mcp`: the MCP servers a working dir's sessions get (docs/mcp.md).

    sessiondag mcp list   [--dir DIR] [--json]     the settings' [mcp_servers] + DIR/.sessiondag/mcp.json
    sessiondag mcp add    NAME [--dir DIR] [--env K=V]... -- COMMAND [ARGS...]      a stdio server
    sessiondag mcp add    NAME [--dir DIR] --url URL [--sse] [--header 'K: V']...  an http / sse server
    sessiondag mcp remove NAME [--dir DIR]
    sessiondag mcp test   [NAME] [--dir DIR] [--json]  start them as a session would, list their tools

add / remove edit DIR/.sessiondag/mcp.json (the Claude-Code `mcpServers` shape; other keys kept).
`list` never prints env or header values. `test` exits 1 when a server does not start, with the
typed error (`mcp_server_failed`) a session would get. DIR defaults to the current directory."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NotRequired, TypedDict

import orjson

from ..core.errors import ConfigError, McpServerError, PathRefusedError
from ..core.mcp_config import McpServer
from ..core.settings import Settings
from ..core.settings_source import current
from .common import Parser, UsageError, fail

PROG = "sessiondag mcp"


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = Parser(prog=PROG, description="The MCP servers of a working dir's sessions.")
    sub = ap.add_subparsers(dest="op", required=True)
    for op in ("list", "add", "remove", "test"):
        p = sub.add_parser(op)
        p.add_argument("--dir", default=".", help="the working dir (default: the current one)")
        if op in ("list", "test"):
            p.add_argument("--json", action="store_true", help="JSON on stdout")
        if op == "test":
            p.add_argument("name", nargs="?", default=None)
        if op in ("add", "remove"):
            p.add_argument("name")
        if op == "add":
            p.add_argument("--env", action="append", default=[], metavar="K=V")
            p.add_argument("--url", default=None)
            p.add_argument("--sse", action="store_true", help="the URL is an SSE endpoint (default: streamable HTTP)")
            p.add_argument("--header", action="append", default=[], metavar="'K: V'")
    command: list[str] = []
    if "--" in argv:   # the stdio server's command and arguments: everything after --
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1:]
    args = ap.parse_args(argv)
    args.command = command
    return args


def _pairs(items: list[str], sep: str, what: str) -> dict[str, str]:
    out = {}
    for item in items:
        k, found, v = item.partition(sep)
        if not found or not k.strip():
            raise UsageError(f"{what} {item!r}: expected K{sep}V")
        out[k.strip()] = v.strip() if sep == ":" else v
    return out


def _entry(args: argparse.Namespace) -> dict[str, object]:
    if args.url:
        if args.command:
            raise UsageError("give either --url or a command, not both")
        entry: dict[str, object] = {"type": "sse" if args.sse else "http", "url": args.url}
        if args.header:
            entry["headers"] = _pairs(args.header, ":", "--header")
        return entry
    if not args.command:
        raise UsageError("give the server's command after --, or --url")
    entry = {"command": args.command[0], "args": args.command[1:]}
    if args.env:
        entry["env"] = _pairs(args.env, "=", "--env")
    return entry


def configured(working_dir: str, settings: Settings) -> dict[str, McpServer]:
    """The settings' MCP servers and the working dir's .sessiondag/mcp.json over them."""
    from ..workspace.mcp_file import read_servers
    servers = dict(settings.mcp_servers)
    servers.update(read_servers(working_dir, settings.beneath))
    return servers


class _Tested(TypedDict):
    """One server's row of `mcp test`: ok with its tools, else its error (kind, reason, detail)."""
    name: str
    ok: bool
    tools: NotRequired[list[str]]
    error: NotRequired[dict[str, object]]


def _test(servers: dict[str, McpServer], working_dir: str, as_json: bool) -> int:
    from ..runtime.mcp_servers import McpServers
    rows: list[_Tested] = []
    code = 0
    for name, spec in servers.items():   # one at a time: each failure is named
        mgr = McpServers({name: spec}, working_dir)
        try:
            mgr.start()
            rows.append({"name": name, "ok": True, "tools": [t.name for t in mgr.tools()]})
        except McpServerError as e:
            rows.append({"name": name, "ok": False, "error": {"kind": e.code, **e.data()}})
            code = 1
        finally:
            mgr.stop()
    if as_json:
        sys.stdout.write(orjson.dumps({"servers": rows}).decode() + "\n")
    for r in [] if as_json else rows:
        print(f"{r['name']}: ok, {len(r['tools'])} tools: {', '.join(r['tools'])}" if r["ok"] else
              f"{r['name']}: FAILED ({r['error']['reason']}): {r['error']['detail']}")
    return code


def main(argv: list[str]) -> int:
    from ..workspace.mcp_file import REL_PATH, read_doc, write_servers
    try:
        args = parse_args(argv)
        wd = os.path.realpath(args.dir)
        if args.op == "list":
            servers = configured(wd, current())   # the command's settings, resolved at its start
            if args.json:
                sys.stdout.write(orjson.dumps({"servers": [s.public() for s in servers.values()]}).decode() + "\n")
            for s in [] if args.json else servers.values():
                what = " ".join([s.command or "", *s.args]) if s.transport == "stdio" else s.url
                print(f"{s.name:<16} {s.transport:<5} {what}   ({s.origin})")
            return 0
        if args.op == "test":
            servers = configured(wd, current())
            if args.name is not None:
                if args.name not in servers:
                    return fail(PROG, f"no MCP server {args.name!r} for {wd}")
                servers = {args.name: servers[args.name]}
            return _test(servers, wd, args.json)
        doc = read_doc(wd, current().beneath) or {}
        entries = dict(doc.get("mcpServers") or {})
        if args.op == "add":
            entries[args.name] = _entry(args)
        elif args.name not in entries:
            return fail(PROG, f"no MCP server {args.name!r} in {os.path.join(wd, REL_PATH)}")
        else:
            del entries[args.name]
        path = write_servers(wd, entries, current().beneath)
        print(f"{args.op == 'add' and 'added' or 'removed'} {args.name} ({path})")
        return 0
    except UsageError as e:
        return fail(PROG, str(e), 2)
    except (ConfigError, PathRefusedError) as e:
        return fail(PROG, str(e), 2)
