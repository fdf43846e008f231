"""What one daemon knows about the agent turns it runs (`Daemon.agents`; agent_methods.py uses it).

- `active`: session id -> the Runtime of the turn running now (one per session: turns hold the
  session's async lock);
- `runtimes`: every prompt's Runtime (weakly; sub-agents outlive the prompt) -> its session id;
- `last`: session id -> the last prompt's Runtime (weakly), for a cancel with no turn running;
- the daemon's default provider ($SESSIONDAG_PROVIDER and its settings), built on first use and kept:
  a scripted provider's script is consumed across this daemon's prompts;
- the limiter of the worker threads turns run in;
- `mcp`: the sessions' MCP servers (agent_mcp.py), stopped at shutdown.

Two daemons in one process have two of these and share none of it.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple, Unpack

import anyio
import anyio.to_thread

from ..core.settings import Settings
from ..runtime import Runtime, provider_from_env
from ..runtime.providers import Provider
from ..runtime.turns import turn_locks_alive
from .agent_mcp import SessionMcp

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

MAX_TURN_THREADS = 64


class AgentState:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings  # the daemon's, resolved once at its start
        self.active: dict[str, Runtime] = {}
        self.runtimes: "weakref.WeakKeyDictionary[Runtime, str]" = weakref.WeakKeyDictionary()
        self.last: "weakref.WeakValueDictionary[str, Runtime]" = weakref.WeakValueDictionary()
        self.provider: Provider | None = None
        self._limiter: anyio.CapacityLimiter | None = None
        self.mcp = SessionMcp(settings)   # the sessions' MCP servers (agent_mcp.py)

    def default_provider(self) -> Provider:
        """The daemon's provider ($SESSIONDAG_PROVIDER and its settings), built once."""
        if self.provider is None:
            self.provider = provider_from_env(settings=self.settings)
        return self.provider

    def provider_defaults(self) -> dict[str, object]:
        """The provider and model an `agent/prompt` without its own gets, and the settings' profiles."""
        p = self.provider
        settings = self.settings
        profiles = sorted(settings.providers)   # what a session may choose instead (by name)
        if p is not None:
            return {"provider": p.name, "model": p.model, "profiles": profiles}
        return {"provider": settings.provider, "model": settings.model, "profiles": profiles}

    async def run_turn_thread(self, fn: Callable[[Unpack[Ts]], T], *args: Unpack[Ts]) -> T:
        """Agent turns run in worker threads of their own limiter, not the daemon's store pool: a turn
        waits on the model for seconds to minutes, and eight of them must not starve session/* calls."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(MAX_TURN_THREADS)
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    # --- prompts -----------------------------------------------------------------------------
    def started(self, sid: str, rt: Runtime) -> None:
        """A prompt made `rt` for session `sid` (before it waits for the session's lock)."""
        self.runtimes[rt] = sid
        self.last[sid] = rt

    def cancellable(self, sid: str) -> Runtime | None:
        """The Runtime a cancel of `sid` stops: the running turn's, else the last prompt's while
        its sub-agents still run; None if there is nothing to cancel."""
        rt = self.active.get(sid)
        if rt is None:
            rt = self.last.get(sid)
            if rt is None or not rt.subagents_running():
                return None
        return rt

    def cancel_running(self) -> list[str]:
        """Cancel every running turn (daemon shutdown); the sessions they run in."""
        for rt in list(self.active.values()):
            rt.cancel()
        return sorted(self.active)

    async def turns_ended(self, timeout: float = 30.0) -> bool:
        """Wait (shutdown, after cancel_running) until no turn runs: each has committed and answered
        its prompt before connections close and the loop ends. False if some still run at `timeout`."""
        deadline = anyio.current_time() + timeout
        while self.active and anyio.current_time() < deadline:
            await anyio.sleep(0.02)
        return not self.active

    def running_turns(self) -> list[str]:
        return sorted(self.active)

    @staticmethod
    def turn_locks() -> int:
        """Turn locks alive in this process (the runtime is loaded by the first turn, not at start)."""
        return turn_locks_alive()

    def busy_sessions(self) -> set[str]:
        """Sessions with a turn running or sub-agents still at work (never evicted meanwhile)."""
        busy = set(self.active) | self.mcp.starting   # (MCP servers starting: agent_mcp.py)
        for rt, sid in list(self.runtimes.items()):
            if rt.subagents_running():
                busy.add(sid)
        return busy

    async def stop(self, timeout: float = 30.0) -> int:
        """Daemon shutdown: sub-agents a prompt spawned may still run after it returned. Cancel them
        and wait until each has finalized its nodes (`cancelled`) and its follow-up turn, so nothing is
        left `running` on disk. Returns how many runtimes had sub-agents running."""
        live = [rt for rt in list(self.runtimes) if rt.subagents_running()]
        for rt in live:
            rt.cancel()
        for rt in live:
            if not await anyio.to_thread.run_sync(rt.wait_subagents, timeout):
                print(f"sessiondag: sub-agents still running after {timeout:.0f}s at shutdown", file=sys.stderr)
        await self.mcp.stop_all()   # and every session's MCP servers
        return len(live)
