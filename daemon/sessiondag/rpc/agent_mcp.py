"""The MCP servers of the daemon's sessions (docs/mcp.md): which servers a session has, started once
per session and kept across its prompts, stopped with it.

A session's servers are, by name, later winning: the settings file's `[mcp_servers.NAME]` < the
working dir's `.sessiondag/mcp.json` < the servers a client gave for the session (`session/open` /
`session/resume {mcp_servers}`; ACP's `session/new {mcpServers}` comes this way). A client's servers
live in the daemon's memory only — their env and headers may hold secrets, so they are never
written into the session — and a client passes them again after a daemon restart, as ACP clients do
on every load/resume.

Stopped with the session: when the daemon closes it (idle eviction: `release`), on session/reset
(`forget`) and at shutdown (`stop_all`). `servers_for` is called by every prompt: the same configuration reuses the running servers; a
changed one (the file was edited, a client gave others) stops them and starts the new set. Starting
runs in a worker thread (runtime/mcp_servers.py owns its own event loop); a server that does not come
up is the typed error `mcp_server_failed` of the request that wanted it.
"""

from __future__ import annotations

import json
import threading

import anyio.to_thread

from ..core.errors import ConfigError
from ..core.mcp_config import McpServer, parse_servers
from ..core.settings import Settings
from ..runtime.mcp_servers import McpServers
from ..workspace.mcp_file import read_servers
from .invalid_params import InvalidParams


class SessionMcp:
    """`Daemon.agents.mcp`: per session, the client's servers and the running set."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings  # the daemon's: its mcp_servers
        self.given: dict[str, dict[str, McpServer]] = {}
        self.running: dict[str, tuple[str, McpServers]] = {}
        self.starting: set[str] = set()   # sessions whose servers are starting: never evicted meanwhile

    def give(self, sid: str, raw: object) -> None:
        """Record a client's `mcp_servers` for `sid` (InvalidParams when they do not parse)."""
        try:
            self.given[sid] = parse_servers(raw, "client")
        except ConfigError as e:
            raise InvalidParams(f"mcp_servers: {e}") from None

    def configured(self, sid: str, working_dir: str | None) -> dict[str, McpServer]:
        servers: dict[str, McpServer] = dict(self.settings.mcp_servers)
        if working_dir:
            servers.update(read_servers(working_dir, self.settings.beneath))
        servers.update(self.given.get(sid, {}))
        return servers

    async def servers_for(self, sid: str, working_dir: str | None) -> McpServers | None:
        servers = await anyio.to_thread.run_sync(self.configured, sid, working_dir)
        key = json.dumps({n: s.to_config() for n, s in servers.items()}, sort_keys=True)
        have = self.running.get(sid)
        if have is not None and have[0] == key:
            return have[1]
        if have is not None:
            await self.stop(sid)
        if not servers:
            return None
        mgr = McpServers(servers, working_dir or ".")
        self.running[sid] = (key, mgr)
        self.starting.add(sid)
        try:
            await anyio.to_thread.run_sync(mgr.start)
        except BaseException:   # the whole set is stopped: the next request starts it again
            if self.running.get(sid, (None, None))[1] is mgr:
                self.running.pop(sid, None)
            await anyio.to_thread.run_sync(mgr.stop)
            raise
        finally:
            self.starting.discard(sid)
        return mgr

    async def stop(self, sid: str) -> None:
        have = self.running.pop(sid, None)
        if have is not None:
            await anyio.to_thread.run_sync(have[1].stop)

    def release(self, sid: str) -> None:
        """The daemon closed the session (eviction): its servers stop, in a thread of their own so
        the caller never waits; a client's servers are kept and start again with the next prompt."""
        have = self.running.pop(sid, None)
        if have is not None:
            threading.Thread(target=have[1].stop, daemon=True, name="sessiondag-mcp-stop").start()

    async def forget(self, sid: str) -> None:
        """The session is gone (deleted): stop its servers, drop what a client gave."""
        self.given.pop(sid, None)
        await self.stop(sid)

    async def stop_all(self) -> None:
        for sid in list(self.running):
            await self.stop(sid)

    def status(self, sid: str) -> list[dict[str, object]]:
        have = self.running.get(sid)
        if have is None:
            return []
        alive = have[1].alive()
        return [{**s.public(), "running": alive.get(n, False), "tools": [t.name for t in have[1].tools()
                                                                          if t.server == n]}
                for n, s in have[1].servers.items()]
