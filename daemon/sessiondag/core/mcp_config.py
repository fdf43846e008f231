"""MCP server configurations: the Claude-Code-compatible `mcpServers` shape, checked, and the names
MCP tools get (docs/mcp.md).

A configuration maps a server name to one of

    {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "V"}, "cwd": "sub/dir"}   # stdio ("type": "stdio")
    {"type": "http", "url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "…"}}   # streamable HTTP
    {"type": "sse", "url": "http://127.0.0.1:8000/sse", "headers": {…}}

(`"disabled": true` drops an entry.) `parse_servers` turns such a mapping — from the settings
file, a working dir's `.sessiondag/mcp.json`, or a client's `mcp_servers` — into `McpServer`s, and
refuses anything else with ConfigError naming where it came from. Pure: reading files is the
caller's job.

Names: an MCP tool is the code node `mcp:<server>/<tool>`; the model calls it by a function name
providers accept (`^[A-Za-z0-9_-]{1,64}$`): `mcp__<server>__<tool>`, other characters as `_`.
`function_name_of(node_name)` maps a recorded node name back (rendering a session's history)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from .errors import ConfigError

TRANSPORTS = ("stdio", "http", "sse")
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_FN_BAD = re.compile(r"[^A-Za-z0-9_-]")
MAX_SERVERS = 64


@dataclass(frozen=True)
class McpServer:
    name: str
    transport: str                     # stdio | http | sse
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None             # stdio: relative to the session's working dir (default: it)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    origin: str = ""                   # where it was configured (shown in errors and `mcp list`)

    def public(self) -> dict[str, object]:
        """What may be shown: everything but env values and header values (they carry secrets)."""
        d: dict[str, object] = {"name": self.name, "type": self.transport, "origin": self.origin}
        if self.transport == "stdio":
            d.update(command=self.command, args=list(self.args), env=sorted(self.env), cwd=self.cwd)
        else:
            d.update(url=self.url, headers=sorted(self.headers))
        return d

    def to_config(self) -> dict[str, object]:
        """The `mcpServers` entry this was parsed from (secrets included: for files the user owns)."""
        if self.transport == "stdio":
            d: dict[str, object] = {"command": self.command, "args": list(self.args)}
            if self.env:
                d["env"] = dict(self.env)
            if self.cwd:
                d["cwd"] = self.cwd
            return d
        return {"type": self.transport, "url": self.url, **({"headers": dict(self.headers)} if self.headers else {})}


def _strings(label: str, value: object, what: str) -> Mapping[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(label, repr(value)[:200], f"{what}: an object of strings")
    if any("\0" in k or "\0" in v for k, v in value.items()):
        raise ConfigError(label, repr(value)[:200], f"{what} without NUL bytes")
    return dict(value)


def parse_server(name: str, entry: object, origin: str) -> McpServer | None:
    """One `mcpServers` entry (None if it is disabled)."""
    label = f"{origin}: mcpServers.{name}"
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigError(label, repr(name)[:80], "a server name of letters, digits, '_', '.' or '-' (1-64)")
    if not isinstance(entry, dict):
        raise ConfigError(label, repr(entry)[:200], "an object {command, args, env} or {type, url, headers}")
    if entry.get("disabled") is True:
        return None
    kind = entry.get("type") or ("stdio" if "command" in entry else None)
    if kind == "streamable-http" or kind == "streamable_http":
        kind = "http"
    if kind not in TRANSPORTS:
        raise ConfigError(label, repr(entry.get("type"))[:80], "type stdio, http or sse (or a command)")
    if kind == "stdio":
        cmd, args, cwd = entry.get("command"), entry.get("args", []), entry.get("cwd")
        if not isinstance(cmd, str) or not cmd or "\0" in cmd:
            raise ConfigError(label, repr(cmd)[:80], "command: a non-empty string")
        if not isinstance(args, list) or not all(isinstance(a, str) and "\0" not in a for a in args):
            raise ConfigError(label, repr(args)[:200], "args: a list of strings")
        if cwd is not None and (not isinstance(cwd, str) or "\0" in cwd):
            raise ConfigError(label, repr(cwd)[:80], "cwd: a path")
        return McpServer(name, "stdio", command=cmd, args=tuple(args), env=_strings(label, entry.get("env"), "env"),
                         cwd=cwd, origin=origin)
    url = entry.get("url")
    if not isinstance(url, str) or not re.match(r"^https?://[^\s\0]+$", url):
        raise ConfigError(label, repr(url)[:200], "url: an http:// or https:// URL")
    return McpServer(name, kind, url=url, headers=_strings(label, entry.get("headers"), "headers"), origin=origin)


def parse_servers(value: object, origin: str) -> dict[str, McpServer]:
    """A `mcpServers` mapping (or a whole file's object holding one under "mcpServers")."""
    if isinstance(value, dict) and isinstance(value.get("mcpServers"), dict):
        value = value["mcpServers"]
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: mcpServers", repr(value)[:200], "an object: server name -> configuration")
    if len(value) > MAX_SERVERS:
        raise ConfigError(f"{origin}: mcpServers", f"{len(value)} servers", f"at most {MAX_SERVERS}")
    out: dict[str, McpServer] = {}
    for name, entry in value.items():
        s = parse_server(name, entry, origin)
        if s is not None:
            out[name] = s
    return out


def node_name(server: str, tool: str) -> str:
    return f"mcp:{server}/{tool}"


def function_name(server: str, tool: str) -> str:
    return _FN_BAD.sub("_", f"mcp__{server}__{tool}")[:64]


def function_name_of(name: str) -> str:
    """The function name a recorded tool node is rendered under: `mcp:<s>/<t>` -> `mcp__<s>__<t>`."""
    if name.startswith("mcp:") and "/" in name:
        server, _, tool = name[4:].partition("/")
        return function_name(server, tool)
    return name
