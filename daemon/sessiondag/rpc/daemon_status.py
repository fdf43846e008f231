"""`daemon/status`: the daemon core's own figures plus what the serving process and the agent layer
know — the socket and log file, the turns running now, the provider/model a prompt gets by default."""

from __future__ import annotations

from typing import Any


def provider_defaults() -> dict[str, Any]:
    """The provider and model an `agent/prompt` without its own gets (the daemon's environment)."""
    from . import agent_methods
    p = agent_methods._provider
    if p is not None:
        return {"provider": p.name, "model": p.model}
    from ..core.settings_source import current
    settings = current()
    return {"provider": settings.provider, "model": settings.model}


def status(daemon: Any) -> dict[str, Any]:
    from . import agent_methods
    out = daemon.status()
    out.update(socket=getattr(daemon, "socket_path", None), log_path=getattr(daemon, "log_path", None),
               running_turns=sorted(agent_methods._ACTIVE), defaults=provider_defaults())
    return out
