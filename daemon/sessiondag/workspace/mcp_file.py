"""A working dir's MCP servers: `.sessiondag/mcp.json` in the Claude-Code-compatible shape
`{"mcpServers": {NAME: {...}}}` (core/mcp_config.py, docs/mcp.md).

The file comes with a checkout: hostile until checked. It is read through `Beneath` (no symlink
anywhere on the way, a regular file, at most MAX_BYTES), parsed as JSON and every entry checked;
anything else is a ConfigError naming the file. No file: no servers. `write_servers` is what
`sessiondag mcp add|remove` uses (atomic replace, the other keys of the file kept)."""

from __future__ import annotations

import json
import os
from typing import Any

from ..core.errors import ConfigError, PathRefusedError
from ..core.mcp_config import McpServer, parse_servers
from .beneath import Beneath

REL_PATH = ".sessiondag/mcp.json"
MAX_BYTES = 256 * 1024


def read_doc(working_dir: str, resolver: str = "auto") -> dict[str, Any] | None:
    label = os.path.join(working_dir, REL_PATH)
    try:
        with Beneath(working_dir, resolver=resolver) as b:
            data = b.read_bytes(REL_PATH, limit=MAX_BYTES)
    except FileNotFoundError:
        return None
    except PathRefusedError as e:
        raise ConfigError(label, REL_PATH, f"a regular file inside the working dir ({e})") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(label, f"{len(data)}+ bytes", f"at most {MAX_BYTES} bytes")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(label, "…", f"JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ConfigError(label, type(doc).__name__, 'an object {"mcpServers": {...}}')
    return doc


def read_servers(working_dir: str, resolver: str = "auto") -> dict[str, McpServer]:
    """The servers `.sessiondag/mcp.json` of `working_dir` configures ({} without the file)."""
    doc = read_doc(working_dir, resolver)
    if doc is None:
        return {}
    return parse_servers(doc.get("mcpServers", {}), os.path.join(working_dir, REL_PATH))


def write_servers(working_dir: str, servers: dict[str, object], resolver: str = "auto") -> str:
    """Replace the file's `mcpServers` with `servers` (checked first); returns the file's path."""
    path = os.path.join(working_dir, REL_PATH)
    parse_servers(servers, path)
    doc = read_doc(working_dir, resolver) or {}
    doc["mcpServers"] = servers
    with Beneath(working_dir, resolver=resolver) as b:
        b.write_bytes(REL_PATH, (json.dumps(doc, indent=2) + "\n").encode())
    return path
